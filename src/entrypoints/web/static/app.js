// firmsift web app: the new-batch form (preview, estimate, submit), a batch's live table
// (polling, filters, sorting) and the rows' correction forms. Plain DOM code of our own, no
// library: values from the server are set with textContent, or arrive as HTML the server rendered
// and escaped.
"use strict";

const csrf = () => document.querySelector('meta[name="csrf-token"]').content;

async function send(url, body, type) {
  const response = await fetch(url, {
    method: "POST", body, credentials: "same-origin",
    headers: { "Content-Type": type, "X-CSRF-Token": csrf() },
  });
  const document_ = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = document_.error || {};
    const details = (error.details || []).map((d) => `${d.value}: ${d.reason}`).join("; ");
    throw new Error(`${error.message || `the server answered ${response.status}`}${details ? ` (${details})` : ""}`);
  }
  return document_;
}

function element(tag, text) {
  const made = document.createElement(tag);
  if (text !== undefined) made.textContent = String(text);
  return made;
}

function newBatchPage() {
  const form = document.getElementById("new-batch");
  const problem = document.getElementById("problem");
  const checked = document.getElementById("checked");
  const column = document.getElementById("column");
  const submit = document.getElementById("submit");
  const kind = () => form.querySelector('input[name="kind"]:checked').value;

  const showKind = () => {
    document.getElementById("list-input").hidden = kind() !== "list";
    document.getElementById("csv-input").hidden = kind() !== "csv";
    checked.hidden = true;
  };
  form.querySelectorAll('input[name="kind"]').forEach((radio) => radio.addEventListener("change", showKind));

  const request = () => {
    const file = document.getElementById("file").files[0];
    if (kind() === "csv" && !file) throw new Error("choose a CSV file first");
    const body = kind() === "csv" ? file : document.getElementById("domains").value;
    if (kind() === "list" && !body.trim()) throw new Error("paste at least one domain");
    const query = new URLSearchParams({ kind: kind(), classifier: document.getElementById("classifier").value });
    if (kind() === "csv" && column.value) query.set("column", column.value);
    return { query, body, type: kind() === "csv" ? "text/csv" : "text/plain" };
  };
  const fail = (error) => { problem.textContent = error.message; problem.hidden = false; };

  const check = async () => {
    problem.hidden = true;
    submit.disabled = true;
    try {
      const { query, body, type } = request();
      showChecked(await send(`/new/check?${query}`, body, type));
      submit.disabled = false;
    } catch (error) { checked.hidden = true; fail(error); }
  };

  const showChecked = (answer) => {
    if (kind() === "csv") {
      column.replaceChildren(...answer.columns.map((name) => {
        const option = element("option", name);
        option.value = name;
        option.selected = name === answer.column;
        return option;
      }));
      column.disabled = false;
    }
    const estimate = answer.estimate;
    const facts = [
      ["Rows", estimate.total], ["Domains to classify", estimate.accepted], ["Duplicates", estimate.duplicates],
      ["Rejected rows", estimate.total - estimate.accepted - estimate.duplicates],
      ["Known companies", estimate.known_companies], ["Cached answers", estimate.cached],
      ["To ask the LLM (at most)", estimate.to_ask],
      ["Expected cost", estimate.llm.cost_usd === null ? estimate.llm.cost : `$${estimate.llm.cost_usd.toFixed(4)}`],
    ];
    document.getElementById("estimate").replaceChildren(...facts.flatMap(([name, value]) => [element("dt", name), element("dd", value)]));
    document.querySelector("#preview tbody").replaceChildren(...answer.preview.map((row) => {
      const tr = element("tr");
      tr.append(element("td", row.line ?? row.index + 1), element("td", row.value), element("td", row.domain ?? "—"),
                element("td", row.rejection ?? ""));
      return tr;
    }));
    const rejected = answer.rejected.map((row) => element("li", `line ${row.line ?? row.index + 1}: ${row.reason}`));
    document.getElementById("rejected").replaceChildren(...(rejected.length ? rejected : [element("li", "none")]));
    checked.hidden = false;
  };

  form.addEventListener("submit", (event) => { event.preventDefault(); check(); });
  column.addEventListener("change", check);
  document.getElementById("file").addEventListener("change", () => {
    const reading = element("option", "reading the file…");
    reading.value = "";  // no column named: the server guesses it as the CLI does
    column.replaceChildren(reading);
    check();
  });
  submit.addEventListener("click", async () => {
    submit.disabled = true;
    try {
      const { query, body, type } = request();
      const made = await send(`/new/submit?${query}`, body, type);
      window.location.assign(made.url);
    } catch (error) { fail(error); submit.disabled = false; }
  });
  showKind();
}

function batchPage() {
  const progress = document.getElementById("progress");
  const tbody = document.querySelector("#results tbody");
  const filters = document.getElementById("filters");
  const shown = document.getElementById("shown");
  let sortKey = "index", sortType = "number", ascending = true;

  const applyFilters = () => {
    const wanted = Object.fromEntries(new FormData(filters));
    let visible = 0;
    for (const tr of tbody.rows) {
      const d = tr.dataset;
      const hide = (wanted.answer && d.answer !== wanted.answer)
        || (wanted.confidence && !(d.confidence !== "" && Number(d.confidence) <= Number(wanted.confidence)))
        || (wanted.source && d.source !== wanted.source)
        || (wanted.status && d.status !== wanted.status)
        || (wanted.domain && !d.domain.includes(wanted.domain.trim().toLowerCase()));
      tr.hidden = Boolean(hide);
      if (!hide) visible += 1;
    }
    shown.textContent = `Showing ${visible} of ${tbody.rows.length} rows on this page.`;
  };

  const applySort = () => {
    const value = (tr) => (sortType === "number" ? Number(tr.dataset[sortKey] || -1) : tr.dataset[sortKey] || "");
    const rows = [...tbody.rows].sort((a, b) => {
      const [x, y] = [value(a), value(b)];
      const order = x < y ? -1 : x > y ? 1 : Number(a.dataset.index) - Number(b.dataset.index);
      return ascending ? order : -order;
    });
    tbody.append(...rows);
    document.querySelectorAll("#results th").forEach((th) => {
      const button = th.querySelector("button");
      if (button && button.dataset.sort === sortKey) th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      else th.removeAttribute("aria-sort");
    });
  };

  document.querySelectorAll("#results th button").forEach((button) => button.addEventListener("click", () => {
    ascending = sortKey === button.dataset.sort ? !ascending : true;
    sortKey = button.dataset.sort;
    sortType = button.dataset.type || "text";
    applySort();
  }));
  filters.addEventListener("input", applyFilters);
  filters.addEventListener("submit", (event) => event.preventDefault());

  const showProgress = (p) => {
    progress.dataset.status = p.status;
    progress.querySelector('[data-field="status"]').textContent = p.status;
    progress.querySelector('[data-field="status"]').className = `status status-${p.status.toLowerCase()}`;
    const bar = progress.querySelector('[data-field="bar"]');
    bar.max = p.total || 1;
    bar.value = p.done + p.failed + p.cancelled;
    progress.querySelector('[data-field="counts"]').textContent =
      `${p.done} done, ${p.failed} failed, ${p.pending} pending${p.cancelled ? `, ${p.cancelled} cancelled` : ""} of ${p.total} domains`;
  };

  const poll = async () => {
    if (progress.dataset.status !== "RUNNING") return;
    try {
      const response = await fetch(`/batch/${progress.dataset.batch}/rows?start=${progress.dataset.start}`,
                                   { credentials: "same-origin" });
      if (response.redirected || !response.ok) return;  // signed out or gone: stop polling
      const answer = await response.json();
      const open = new Set([...tbody.querySelectorAll("details[open]")].map((d) => d.closest("tr").dataset.index));
      // A row whose correction is being written stays as it is: what was typed is never lost.
      const writing = [...tbody.querySelectorAll("form.correct")]
        .filter((form) => form.elements.note.value || form.contains(document.activeElement)).map((form) => form.closest("tr"));
      tbody.innerHTML = answer.rows_html;  // rendered and escaped by the server
      tbody.querySelectorAll("tr").forEach((tr) => { if (open.has(tr.dataset.index)) tr.querySelector("details").open = true; });
      writing.forEach((kept) => tbody.querySelector(`tr[data-index="${kept.dataset.index}"]`)?.replaceWith(kept));
      applySort();
      applyFilters();
      showProgress(answer.progress);
    } catch (error) {
      shown.textContent = `Could not refresh the rows (${error.message}); retrying.`;
    }
    setTimeout(poll, 2000);
  };
  applyFilters();
  setTimeout(poll, 1000);
}

// A row's correction form (batch and review pages): sent from here, the row is shown again as
// corrected in place, its details open; problems are listed next to the form, what was typed kept.
// Without this script the form posts as it is and the server sends the browser back to the row.
function correctionForms() {
  document.addEventListener("submit", async (event) => {
    const form = event.target;
    if (!form.matches("form.correct")) return;
    event.preventDefault();
    const problems = form.querySelector("ul.error");
    const button = form.querySelector('button[type="submit"]');
    button.disabled = true;
    try {
      const response = await fetch(form.action, {
        method: "POST", body: new URLSearchParams(new FormData(form)), credentials: "same-origin",
        headers: { "X-CSRF-Token": csrf() },  // the header also tells the server to answer in JSON
      });
      const answer = await response.json().catch(() => ({}));
      if (!response.ok) {
        throw new Error((answer.errors || []).join("\n") || `the correction was not saved (the server answered ${response.status})`);
      }
      if (!answer.row_html) { window.location.reload(); return; }
      const holder = element("tbody");
      holder.innerHTML = answer.row_html;  // rendered and escaped by the server
      const fresh = holder.querySelector("tr");
      const details = fresh.querySelector("details");
      details.open = true;
      const said = element("p", answer.message);
      said.className = "notice";
      said.setAttribute("role", "status");
      details.querySelector("summary").after(said);
      form.closest("tr").replaceWith(fresh);
      details.querySelector("summary").focus();
    } catch (error) {
      problems.replaceChildren(...error.message.split("\n").map((line) => element("li", line)));
      problems.hidden = false;
      button.disabled = false;
    }
  });
}

const pages = { new: newBatchPage, batch: batchPage };
(pages[document.body.dataset.page] || (() => {}))();
correctionForms();
