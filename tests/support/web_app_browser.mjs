// The web app's analyst flow in real headless Chromium, as one JSON line on stdout:
//
//   node tests/support/web_app_browser.mjs BASE_URL API_KEY CSV_FILE OUT_DIR
//
// Signs in, uploads CSV_FILE (preview and estimate first), watches the rows arrive, filters, sorts,
// opens a row, visits the review queue and corrects a row there, sees the correction on the Human
// answers page, exports and undoes it, exports the batch as CSV and JSON Lines, looks at a narrow
// screen, signs out. Saves a screenshot of each step and the exports in OUT_DIR. Reports console errors and
// warnings (a Content-Security-Policy violation is one), page errors, failed requests, CSP
// violation events, and axe-core's serious or critical violations on every page. Drives the system
// Chromium (FIRMSIFT_CHROMIUM or /usr/bin/chromium), as browser_check.mjs does.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [base, apiKey, csvFile, outDir] = process.argv.slice(2);
if (!base || !apiKey || !csvFile || !outDir) {
  console.error("usage: node web_app_browser.mjs BASE_URL API_KEY CSV_FILE OUT_DIR");
  process.exit(2);
}
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const browser = await chromium.launch({
  executablePath: process.env.FIRMSIFT_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  timeout: 60_000,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const report = { errors: [], csp: [], axe: {}, screenshots: [], steps: {} };
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  // Runs through the DevTools protocol, outside the page's policy: records every CSP violation.
  await context.addInitScript(() => {
    window.__csp = [];
    document.addEventListener("securitypolicyviolation",
      (e) => window.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} (${e.sourceFile}:${e.lineNumber})`));
  });
  const page = await context.newPage();
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") {
      report.errors.push(`console ${message.type()} on ${page.url()}: ${message.text()}`);
    }
  });
  page.on("pageerror", (error) => report.errors.push(`page error: ${error.message}`));
  page.on("requestfailed", (request) => {
    const why = request.failure()?.errorText ?? "unknown";
    // A poll cut short by leaving the page, or a download handed to the browser: not failures.
    if (why === "net::ERR_ABORTED" && /\/rows\?|\/export\./.test(request.url())) return;
    report.errors.push(`request failed: ${request.url()} (${why})`);
  });
  page.on("request", (request) => {
    if (!request.url().startsWith(base)) report.errors.push(`request outside the app: ${request.url()}`);
  });

  let step = 0;
  const shot = async (name) => {
    step += 1;
    const path = join(outDir, `${String(step).padStart(2, "0")}-${name}.png`);
    await page.screenshot({ path, fullPage: true });
    report.screenshots.push(path);
  };
  const audit = async (name) => {
    await page.evaluate(axeSource);
    const found = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(", ")})`));
    report.axe[name] = found;
    report.csp.push(...(await page.evaluate(() => window.__csp)));
  };

  // Sign in.
  await page.goto(`${base}/`);
  report.steps.login_url = new URL(page.url()).pathname;
  await audit("login");
  await shot("sign-in");
  await page.getByLabel("API key").fill(apiKey);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${base}/`);
  report.steps.key_in_storage = await page.evaluate((key) =>
    [document.cookie, JSON.stringify(localStorage), JSON.stringify(sessionStorage)].some((s) => s.includes(key)), apiKey);
  await audit("batches-empty");
  await shot("signed-in");

  // Upload the CSV: preview and estimate, then submit.
  await page.getByRole("link", { name: "New batch" }).first().click();
  await page.getByLabel("Upload a CSV file").check();
  await page.getByLabel("CSV file (UTF-8, with a header row)").setInputFiles(csvFile);
  await page.locator("#checked").waitFor({ state: "visible", timeout: 60_000 });
  report.steps.column = await page.locator("#column").inputValue();
  report.steps.preview_rows = await page.locator("#preview tbody tr").count();
  report.steps.rejected_shown = await page.locator("#rejected li").allTextContents();
  report.steps.estimate = await page.locator("#estimate").innerText();
  await audit("new-batch");
  await shot("preview-and-estimate");
  await page.getByRole("button", { name: "Submit batch" }).click();
  await page.waitForURL(/\/batch\/[0-9a-f-]+$/);
  report.steps.batch_url = page.url();

  // Watch the rows arrive.
  const seen = [];
  const deadline = Date.now() + 180_000;
  let shotRunning = false;
  while (Date.now() < deadline) {
    const done = await page.locator('#results tbody tr[data-status="DONE"]').count();
    if (seen.at(-1) !== done) seen.push(done);
    if (!shotRunning && done > 0) { await shot("rows-arriving"); shotRunning = true; }
    if ((await page.locator("#progress").getAttribute("data-status")) !== "RUNNING") break;
    await page.waitForTimeout(500);
  }
  const done = await page.locator('#results tbody tr[data-status="DONE"]').count();
  if (seen.at(-1) !== done) seen.push(done);
  report.steps.done_counts_seen = seen;
  report.steps.final_status = await page.locator("#progress").getAttribute("data-status");
  report.steps.rows = await page.locator("#results tbody tr").count();
  await audit("batch");
  await shot("batch-finished");

  // Filter: answers "no" only, then sort by confidence.
  await page.getByLabel("Answer", { exact: true }).selectOption("no");
  const visible = page.locator("#results tbody tr:not([hidden])");
  report.steps.filtered_rows = await visible.count();
  report.steps.filtered_answers = [...new Set(await visible.evaluateAll((rows) => rows.map((r) => r.dataset.answer)))];
  await shot("filtered");
  await page.getByRole("button", { name: "Confidence" }).click();
  report.steps.sorted = await page.locator("th", { has: page.getByRole("button", { name: "Confidence" }) }).getAttribute("aria-sort");

  // Open a row with the keyboard.
  const summary = visible.first().locator("summary");
  await summary.focus();
  await page.keyboard.press("Enter");
  const details = visible.first().locator("details");
  report.steps.row_open = await details.evaluate((d) => d.open);
  report.steps.row_details = await details.locator("dl").innerText();
  report.steps.evidence_rel = await details.locator("a").first().getAttribute("rel").catch(() => null);
  await audit("batch-row-open");
  await shot("row-open");
  await page.screenshot({ path: join(outDir, "batch-viewport.png") });  // what README.md shows

  // The review queue.
  await page.getByLabel("Answer", { exact: true }).selectOption("");
  await page.getByRole("link", { name: "Review doubtful rows" }).click();
  await page.waitForURL(/\/review$/);
  report.steps.review_rows = await page.locator("tbody tr").count();
  await audit("review");
  await shot("review");

  // Correct the first doubtful row from the keyboard: its details, "no", a note, Save.
  const doubtful = page.locator("tbody tr").first();
  report.steps.corrected_domain = (await doubtful.locator("td.domain").innerText()).trim();
  await doubtful.locator("summary").focus();
  await page.keyboard.press("Enter");
  await doubtful.getByLabel("no", { exact: true }).check();
  await doubtful.getByLabel("Note: why this answer (required)").fill("Checked by hand: <b>not</b> a CPG brand");
  await doubtful.getByLabel("Note: why this answer (required)").press("Tab");
  await page.keyboard.press("Enter");  // the focus is on Save correction
  const corrected = page.locator(`tr:has(td.domain:text-is("${report.steps.corrected_domain}")) .corrected`);
  await corrected.waitFor({ timeout: 30_000 });
  report.steps.corrected_row = await corrected.innerText();
  report.steps.correction_notice = await page.locator("tbody .notice").innerText();
  await audit("review-corrected");
  await shot("review-corrected");

  // The Human answers page: the correction listed, exported, then undone.
  await page.getByRole("link", { name: "Human answers" }).first().click();
  await page.waitForURL(`${base}/human-answers`);
  report.steps.human_answers = await page.locator("tbody tr").allInnerTexts();
  await audit("human-answers");
  await shot("human-answers");
  const [corrections] = await Promise.all([page.waitForEvent("download"),
                                           page.getByRole("link", { name: "Export all as CSV" }).click()]);
  report.steps.export_human_answers = join(outDir, "human-answers.csv");
  await corrections.saveAs(report.steps.export_human_answers);
  await page.getByRole("button", { name: `Undo the correction of ${report.steps.corrected_domain} (cpg)` }).click();
  await page.waitForURL(`${base}/human-answers`);
  report.steps.undo_notice = await page.locator(".notice").innerText();
  report.steps.human_answers_after_undo = await page.locator("tbody tr").count();
  await audit("human-answers-undone");
  await shot("human-answers-undone");
  await page.goto(report.steps.batch_url);

  // Export both formats.
  for (const [name, label] of [["csv", "Export CSV"], ["jsonl", "Export JSON Lines"]]) {
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: label }).click()]);
    const path = join(outDir, `export.${name}`);
    await download.saveAs(path);
    report.steps[`export_${name}`] = path;
  }

  // The list of batches with this one in it, and a batch that is not there.
  await page.goto(`${base}/`);
  report.steps.listed = await page.locator("tbody tr").count();
  await audit("batches");
  await shot("batches");
  const missing = await page.goto(`${base}/batch/00000000-0000-4000-8000-000000000000`);
  report.steps.missing_status = missing.status();
  await audit("not-found");
  // Chromium logs the 404 asked for here as a console error: the one expected error of the flow.
  report.errors = report.errors.filter((e) => !(e.includes("404") && e.includes("00000000-0000-4000-8000")));
  await page.goto(report.steps.batch_url);

  // A narrow screen: nothing wider than the viewport but the scrollable table region.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  report.steps.narrow_overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await audit("batch-narrow");
  await shot("narrow");
  await page.setViewportSize({ width: 1280, height: 900 });

  // Sign out: back to the sign-in page, and the pages are closed again.
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL(`${base}/login`);
  await shot("signed-out");
  await page.goto(`${base}/`);
  report.steps.after_sign_out = new URL(page.url()).pathname;
  report.csp.push(...(await page.evaluate(() => window.__csp)));
} catch (error) {
  report.errors.push(`flow failed: ${error.stack || error}`);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
