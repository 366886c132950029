// Open a page in real headless Chromium and report what went wrong loading it, as one JSON line.
//
//   node tests/support/browser_check.mjs FILE_URL SCREENSHOT.png [--open-details]
//
// Prints {errors, requests, title, h1, height}: errors are console errors and warnings (a Content
// Security Policy violation is one), uncaught page errors and failed requests; requests are every URL
// the page asked for besides itself. Takes a full-page screenshot. --open-details expands every
// <details> first, to look at collapsed tables. Drives the system Chromium (FIRMSIFT_CHROMIUM or
// /usr/bin/chromium): playwright-core never downloads a browser.
import { chromium } from "playwright-core";

const [url, screenshot, ...flags] = process.argv.slice(2);
if (!url || !screenshot) {
  console.error("usage: node browser_check.mjs FILE_URL SCREENSHOT.png [--open-details]");
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: process.env.FIRMSIFT_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  timeout: 60_000,
  // No sandbox: CI runs as root in a container. The rest keeps Chromium off the network on its own
  // account (updates, sync, field trials), so any request seen is one the page made.
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  const requests = [];
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") {
      errors.push(`console ${message.type()}: ${message.text()}`);
    }
  });
  page.on("pageerror", (error) => errors.push(`page error: ${error.message}`));
  page.on("requestfailed", (request) =>
    errors.push(`request failed: ${request.url()} (${request.failure()?.errorText ?? "unknown"})`));
  page.on("request", (request) => {
    if (request.url() !== url) requests.push(request.url());
  });

  await page.goto(url, { waitUntil: "load", timeout: 30_000 });
  if (flags.includes("--open-details")) {
    // Runs through the DevTools protocol, which the page's policy (no script at all) does not govern.
    await page.evaluate(() => document.querySelectorAll("details").forEach((d) => { d.open = true; }));
  }
  const title = await page.title();
  const h1 = (await page.locator("h1").first().textContent({ timeout: 5_000 }).catch(() => null))?.trim() ?? null;
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(JSON.stringify({ errors, requests, title, h1, height }));
} finally {
  await browser.close();
}
