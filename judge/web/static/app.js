// kernel-judge web pages: a single page over the REST API. No external assets.
"use strict";

// who is signed in comes from GET /api/me: the session is an HttpOnly cookie scripts never see
const state = { name: null, role: null, team: null, timer: null, clockTimer: null, unreadTimer: null,
                clockFor: undefined, page: 0 };
// earlier versions kept the API token in localStorage, where any script could read it
for (const key of ["kj_token", "kj_name", "kj_role"]) localStorage.removeItem(key);
const $ = (sel, root = document) => root.querySelector(sel);
const view = () => $("#view");

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;",
    ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function num(value, digits = 4) {
  if (value === null || value === undefined || value === "") return "–";
  if (typeof value === "string") return esc(value);
  return Number(value).toPrecision(digits).replace(/\.?0+$/, "").replace(/\.?0+e/, "e");
}
function verdict(v, stateName) {
  if (!v) return `<span class="pending">${esc(stateName || "QUEUED")}</span>`;
  return `<span class="v-${esc(v)}">${esc(v)}</span>`;
}
function when(iso) { return iso ? new Date(iso).toLocaleString() : "–"; }

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}
async function api(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  if (options.body && typeof options.body !== "string") {
    headers["Content-Type"] = "application/json";
    options = { ...options, body: JSON.stringify(options.body) };
  }
  const response = await fetch(path, { ...options, headers });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!response.ok) {
    if (response.status === 401 && state.name && path !== "/api/session") forget();
    throw new ApiError(response.status, (data && data.error) || `HTTP ${response.status}`);
  }
  return data;
}

function banner(message) {
  const el = $("#banner");
  el.textContent = message || "";
  el.hidden = !message;
}
// A poll still in flight when the page changes must not draw the old page over the new one:
// a page's polls stop drawing once `left()` (made as the page starts) says it was left
function leaving() {
  const page = state.page;
  return () => state.page !== page;
}
function every(ms, fn) {
  clearInterval(state.timer);
  state.timer = setInterval(() => fn().catch((e) => banner(e.message)), ms);
}

// -- chrome -----------------------------------------------------------------------------------
function renderHeader() {
  const links = [["#/problems", "Problems"], ["#/submissions", "My submissions"],
                 ["#/leaderboard", "Leaderboard"], ["#/clarifications", "Clarifications"]];
  if (state.role === "admin") links.push(["#/admin", "Organizer"], ["#/audit", "Audit log"]);
  const here = location.hash.split("/").slice(0, 2).join("/");
  const shown = state.name ? links : links.filter(([href]) => href === "#/leaderboard");
  $("#nav").innerHTML = shown.map(([href, label]) =>
    `<a href="${href}" class="${here === href ? "active" : ""}">${label}</a>`).join("");
  $("#who").innerHTML = state.name
    ? `<a href="#/account" id="account">${esc(state.name)}</a> <button class="secondary" id="signout">Sign out</button>`
    : `<a href="#/signin">Sign in</a>`;
  const out = $("#signout");
  if (out) out.onclick = signOut;
}
function forget() {
  Object.assign(state, { name: null, role: null, team: null });
  renderHeader();
}
async function signOut() {
  try { await api("/api/session", { method: "DELETE" }); } catch { /* signed out anyway */ }
  forget();
  location.hash = "#/signin";
}
async function whoAmI() {
  try {
    const me = await api("/api/me");
    Object.assign(state, { name: me.name, role: me.role, team: me.team });
  } catch { forget(); }
}
async function startClock() {
  clearInterval(state.clockTimer);
  let contests = [];
  try { contests = await api("/api/contests"); } catch { return; }
  // a contest with per-user windows first: its contestants need its Start button
  const contest = contests.find((c) => c.state === "running" && c.window_s) ||
                  contests.find((c) => c.state === "running") ||
                  contests.find((c) => c.state === "not_started");
  if (!contest) { $("#clock").textContent = ""; return; }
  // my own time where it is not everyone's: a window to start, or extra time
  let mine = null;
  if (state.name && contest.state === "running") {
    try { mine = await api(`/api/contests/${encodeURIComponent(contest.slug)}/me`); } catch { mine = null; }
  }
  if (mine && mine.state === "to_start") {
    $("#clock").innerHTML = `${esc(contest.title)}: your ${Math.round(mine.window_s / 60)} min
      <button id="start-window" class="secondary">Start my time</button>`;
    $("#start-window").onclick = async () => {
      try {
        await api(`/api/contests/${encodeURIComponent(contest.slug)}/start`, { method: "POST" });
        await startClock();
      } catch (e) { banner(e.message); }
    };
    return;
  }
  const tick = () => {
    const now = Date.now();
    const start = contest.starts_at ? Date.parse(contest.starts_at) : null;
    const own = mine && (mine.window_s || mine.extra_s) && mine.ends_at ? Date.parse(mine.ends_at) : null;
    const end = own || (contest.ends_at ? Date.parse(contest.ends_at) : null);
    const whose = own ? "your time" : "running";
    let text;
    if (start && now < start) text = `starts in ${duration(start - now)}`;
    else if (end && now >= end) text = own ? "your time ended" : "ended";
    else text = end ? `${whose}, ${duration(end - now)} left` : "running";
    $("#clock").textContent = `${contest.title}: ${text}`;
  };
  tick();
  state.clockTimer = setInterval(tick, 1000);
}
// unread clarifications on every page: answers and announcements for contestants, questions
// not answered yet for organizers
async function showUnread() {
  const box = $("#unread");
  if (!state.name) { box.hidden = true; return; }
  let rows = [];
  try { rows = await api("/api/clarifications?unread=true"); } catch { return; }
  box.hidden = rows.length === 0;
  if (!rows.length) return;
  if (state.role === "admin") {
    box.innerHTML = `<a href="#/clarifications">${rows.length} question${rows.length > 1 ? "s" : ""} waiting for an answer</a>`;
    return;
  }
  box.innerHTML = rows.map((c) => `<div class="item"><b>${c.announcement ? "Announcement" : "Answer"}${
      c.problem ? ` (${esc(c.problem)})` : ""}:</b> ${c.question ? `<span class="muted">${esc(c.question)}</span> → ` : ""}${
      esc(c.answer)}</div>`).join("")
    + `<div class="row"><a href="#/clarifications">All clarifications</a>
      <button class="secondary" id="mark-read">Mark read</button></div>`;
  $("#mark-read").onclick = async () => {
    await api("/api/clarifications/read", { method: "POST", body: { ids: rows.map((c) => c.id) } });
    await showUnread();
  };
}

function duration(ms) {
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return `${h}h ${String(m).padStart(2, "0")}m ${String(s % 60).padStart(2, "0")}s`;
}

// -- pages ------------------------------------------------------------------------------------
async function signInPage() {
  view().innerHTML = `<h1>Sign in</h1>
    <form id="signin" class="stack">
      <label for="name">Name</label>
      <input id="name" autocomplete="username" required size="32">
      <label for="password">Password</label>
      <input id="password" type="password" autocomplete="current-password" required size="32">
      <button type="submit">Sign in</button>
      <div class="error" id="signin-error"></div>
    </form>
    <details><summary>Sign in with an API token instead</summary>
      <form id="token-signin" class="stack">
        <label for="token">API token (from <code>kjudge user add NAME</code> or your account page)</label>
        <input id="token" type="password" autocomplete="off" required size="48">
        <button type="submit" class="secondary">Sign in with the token</button>
        <div class="error" id="token-error"></div>
      </form></details>`;
  const open = async (body, errorBox) => {
    try {
      const me = await api("/api/session", { method: "POST", body });
      Object.assign(state, { name: me.name, role: me.role, team: me.team });
      location.hash = "#/problems";
    } catch (e) {
      $(errorBox).textContent = e.status === 401 ? (body.token ? "That token is not valid."
        : "Wrong name or password.") : e.message;
    }
  };
  $("#signin").onsubmit = (event) => {
    event.preventDefault();
    open({ name: $("#name").value.trim(), password: $("#password").value }, "#signin-error");
  };
  $("#token-signin").onsubmit = (event) => {
    event.preventDefault();
    open({ token: $("#token").value.trim() }, "#token-error");
  };
}

async function accountPage() {
  view().innerHTML = `<h1>My account</h1>
    <p>${esc(state.name)} · ${esc(state.role)}${state.team ? ` · team ${esc(state.team)}` : ""}</p>
    <h2>Password</h2>
    <form id="password-form" class="stack">
      <label for="current">Current password</label>
      <input id="current" type="password" autocomplete="current-password">
      <label for="new-password">New password (at least 8 characters)</label>
      <input id="new-password" type="password" autocomplete="new-password" minlength="8" required>
      <button type="submit">Change the password</button>
      <div id="password-result"></div>
    </form>
    <h2>API tokens</h2>
    <p class="muted">For the <code>kjudge</code> client (<code>KJUDGE_TOKEN</code>) and scripts
      (<code>Authorization: Bearer …</code>). A token is shown once, when it is made.</p>
    <form id="token-form" class="row"><input id="token-name" placeholder="what it is for" required maxlength="64">
      <button type="submit">Make a token</button></form>
    <div id="token-result"></div><table id="tokens"></table>`;
  const loadTokens = async () => {
    const tokens = await api("/api/me/tokens");
    $("#tokens").innerHTML = `<tr><th>name</th><th>made</th><th>last used</th><th></th></tr>` +
      tokens.map((t) => `<tr data-token="${t.id}"><td>${esc(t.name)}</td><td>${when(t.created_at)}</td>
        <td>${when(t.last_used_at)}</td><td><button class="secondary" data-revoke="${t.id}">Revoke</button></td></tr>`).join("");
    for (const button of view().querySelectorAll("[data-revoke]")) {
      button.onclick = async () => {
        await api(`/api/me/tokens/${button.dataset.revoke}`, { method: "DELETE" });
        await loadTokens();
      };
    }
  };
  $("#token-form").onsubmit = async (event) => {
    event.preventDefault();
    const made = await api("/api/me/tokens", { method: "POST", body: { name: $("#token-name").value } });
    $("#token-result").innerHTML = `<p>New token (shown once): <code id="new-token">${esc(made.token)}</code></p>`;
    await loadTokens();
  };
  $("#password-form").onsubmit = async (event) => {
    event.preventDefault();
    try {
      await api("/api/me/password", { method: "POST",
        body: { current: $("#current").value, new: $("#new-password").value } });
      forget();
      location.hash = "#/signin";  // every session ended, this one too
    } catch (e) { $("#password-result").innerHTML = `<p class="error">${esc(e.message)}</p>`; }
  };
  await loadTokens();
}

async function problemsPage() {
  const problems = await api("/api/problems");
  view().innerHTML = `<h1>Problems</h1><div class="scroll"><table>
    <tr><th>Problem</th><th class="hide-narrow">Languages</th><th class="num">My best</th>
        <th class="num">Solvers</th></tr>
    ${problems.map((p) => `<tr><td><a href="#/problems/${esc(p.slug)}">${esc(p.title)}</a></td>
      <td class="hide-narrow">${esc(p.languages.join(", "))}</td>
      <td class="num">${num(p.best_score)}</td><td class="num">${p.solvers}</td></tr>`).join("")}
    </table></div>`;
}

async function problemPage(slug) {
  const [p, contests] = await Promise.all([api(`/api/problems/${encodeURIComponent(slug)}`),
    api("/api/contests")]);
  const running = contests.filter((c) => c.state === "running" && c.problems.includes(slug));
  const saved = sessionStorage.getItem(`kj_src_${slug}`);
  const language = sessionStorage.getItem(`kj_lang_${slug}`) || p.languages[0];
  const limitKiB = p.limits.source_kb;
  const titled = p.statement_html.trimStart().startsWith("<h1");  // the statement's own title
  view().innerHTML = `${titled ? "" : `<h1>${esc(p.title)}</h1>`}
    <div class="statement">${p.statement_html}</div>
    <h2>Entry point</h2>
    <div class="row"><label for="sig-lang">Language</label>
      <select id="sig-lang">${p.languages.map((l) => `<option>${esc(l)}</option>`).join("")}</select></div>
    <pre id="signature"></pre>
    <ul>${p.arguments.map((a) => `<li><code>${esc(a)}</code></li>`).join("")}</ul>
    <div class="cards">
      <div class="card">rtol<b>${num(p.tolerance.rtol)}</b></div>
      <div class="card">atol<b>${num(p.tolerance.atol)}</b></div>
      <div class="card">matched_ratio ≥<b>${num(p.tolerance.matched_ratio)}</b></div>
      <div class="card">time per call<b>${num(p.limits.run_s)} s</b></div>
      <div class="card">memory<b>${num(p.limits.memory_mb)} MB</b></div>
      <div class="card">score<b>${esc(p.scoring.score)}</b><span class="muted">${esc(p.scoring.aggregate)}</span></div>
    </div>
    <h2>Sample test points</h2>
    <table><tr><th>name</th><th>parameters</th><th>devices</th></tr>
      ${p.samples.map((s) => `<tr><td>${esc(s.name)}</td><td><code>${esc(JSON.stringify(s.params))}</code></td>
        <td>${esc(s.devices.join(", "))}</td></tr>`).join("")}</table>
    <p class="muted">${p.test_points} test points in all; the others are secret.</p>
    <h2>Starter templates</h2>
    <p>${p.languages.map((l) => `<a href="#" data-template="${esc(l)}">${esc(p.templates[l].file)}</a>`).join(" · ")}</p>
    <h2>Submit</h2>
    <form id="submit" class="stack">
      <div class="row"><label for="language">Language</label>
        <select id="language">${p.languages.map((l) => `<option ${l === language ? "selected" : ""}>${esc(l)}</option>`).join("")}</select>
        <label for="upload">or upload a file</label><input id="upload" type="file"></div>
      <div class="row"><label for="contest">Contest</label>
        <select id="contest">${running.map((c) => `<option value="${esc(c.slug)}">${esc(c.title)}</option>`).join("")}
          <option value="">none (practice)</option></select>
        <label for="mode">Mode</label><select id="mode">
          <option value="ranked">ranked: counts</option>
          <option value="benchmark">benchmark: timed, counted nowhere</option>
          <option value="test">test: the samples only, correctness only, fast</option>
          <option value="profile">profile: a sample point's call under Nsight Compute</option></select>
        <span id="quota" class="muted"></span></div>
      <textarea id="source" spellcheck="false" placeholder="run_kernel source"></textarea>
      <div id="editor" class="editor"></div>
      <div class="row"><button type="submit">Submit</button>
        <button type="button" class="secondary" id="use-template">Start from the template</button>
        <span id="size" class="muted"></span></div>
      <div class="error" id="submit-error"></div>
    </form>`;
  const signature = () => { $("#signature").textContent = p.signature[$("#sig-lang").value]; };
  $("#sig-lang").onchange = signature;
  signature();
  for (const link of view().querySelectorAll("[data-template]")) {
    link.onclick = (event) => {
      event.preventDefault();
      const t = p.templates[link.dataset.template];
      const blob = new Blob([t.source], { type: "text/plain" });
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = t.file;
      a.click();
    };
  }
  const source = $("#source");
  const isTemplate = (text) => Object.values(p.templates).some((t) => t.source === text);
  const showSize = () => {
    const kib = new Blob([source.value]).size / 1024;
    $("#size").textContent = `${kib.toFixed(1)} KiB of ${limitKiB} KiB`;
    $("#size").className = kib > limitKiB ? "error" : "muted";
    sessionStorage.setItem(`kj_src_${slug}`, source.value);  // kept across a failed submit
  };
  // CodeMirror when /static/editor.js loaded (make editor), else the textarea itself; the
  // textarea holds the source either way
  const editor = window.KJEditor ? window.KJEditor.create($("#editor"), {
    doc: "", lexer: p.lexers[language], onChange: (text) => { source.value = text; showSize(); },
  }) : plainEditor(source, showSize);
  if (window.KJEditor) source.hidden = true;
  const setSource = (text) => { source.value = text; editor.set(text); showSize(); };
  setSource(saved ?? p.templates[language].source);
  $("#use-template").onclick = () => setSource(p.templates[$("#language").value].source);
  $("#language").onchange = () => {
    const chosen = $("#language").value;
    sessionStorage.setItem(`kj_lang_${slug}`, chosen);
    if (editor.setLexer) editor.setLexer(p.lexers[chosen]);
    if (isTemplate(source.value)) setSource(p.templates[chosen].source);  // untouched: swap
  };
  const showQuota = async () => {
    const chosen = $("#contest").value;
    $("#quota").textContent = "";
    if (!chosen) return;
    const q = await api(`/api/contests/${encodeURIComponent(chosen)}/quota/${encodeURIComponent(slug)}`);
    const left = q.left[$("#mode").value];
    if (!left) return;
    const parts = [];
    if (left.this_hour !== undefined) parts.push(`${left.this_hour} this hour`);
    if (left.in_contest !== undefined) parts.push(`${left.in_contest} in the contest`);
    $("#quota").textContent = `${$("#mode").value} submissions left: ${parts.join(", ")}`;
  };
  $("#contest").onchange = $("#mode").onchange = () => showQuota().catch((e) => banner(e.message));
  showQuota().catch((e) => banner(e.message));
  $("#upload").onchange = async () => {
    const file = $("#upload").files[0];
    if (file) setSource(await file.text());
  };
  $("#submit").onsubmit = async (event) => {
    event.preventDefault();
    $("#submit-error").textContent = "";
    const body = { problem: slug, language: $("#language").value, source: source.value,
                   mode: $("#mode").value };
    if ($("#contest").value) body.contest = $("#contest").value;
    if (new Blob([source.value]).size / 1024 > limitKiB) {
      $("#submit-error").textContent = `The source is larger than ${limitKiB} KiB.`;
      return;
    }
    try {
      const created = await api("/api/submissions", { method: "POST", body });
      location.hash = `#/submissions/${created.id}`;
    } catch (e) {
      $("#submit-error").textContent = e.message;  // the source stays in the editor
    }
  };
}

// The textarea as the editor where editor.js is not built: Tab indents, Enter keeps indentation.
function plainEditor(source, changed) {
  source.oninput = changed;
  source.onkeydown = (event) => {
    if (event.key === "Tab") {
      event.preventDefault();
      source.setRangeText("    ", source.selectionStart, source.selectionEnd, "end");
      changed();
    } else if (event.key === "Enter") {
      const before = source.value.slice(0, source.selectionStart);
      const indent = before.slice(before.lastIndexOf("\n") + 1).match(/^[ \t]*/)[0];
      event.preventDefault();
      source.setRangeText("\n" + indent, source.selectionStart, source.selectionEnd, "end");
      changed();
    }
  };
  return { set: () => {} };  // the textarea already holds what is set
}

async function submissionsPage() {
  const admin = state.role === "admin";
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const filters = admin ? `<form id="filters" class="row">
      <input name="user" placeholder="user" value="${esc(params.get("user") || "")}">
      <input name="problem" placeholder="problem" value="${esc(params.get("problem") || "")}">
      <input name="verdict" placeholder="verdict" value="${esc(params.get("verdict") || "")}">
      <button type="submit" class="secondary">Filter</button></form>` : "";
  const title = admin ? "All submissions" : state.team ? "My team's and my submissions" : "My submissions";
  view().innerHTML = `<h1>${title}</h1>${filters}
    <div class="scroll"><table id="subs"></table></div>`;
  if (admin) {
    $("#filters").onsubmit = (event) => {
      event.preventDefault();
      const query = new URLSearchParams([...new FormData(event.target)].filter(([, v]) => v));
      location.hash = `#/submissions?${query}`;
    };
  }
  const left = leaving();
  const load = async () => {
    const rows = await api(`/api/submissions?${params}`);
    if (left()) return false;
    $("#subs").innerHTML = `<tr><th>#</th>${admin || state.team ? "<th>user</th>" : ""}<th>problem</th><th>contest</th>
      <th class="hide-narrow">language</th><th>verdict</th><th class="num">score</th>
      <th class="num">speedup</th><th class="num hide-narrow">time ms</th>
      <th class="num hide-narrow">memory MB</th><th class="hide-narrow">submitted</th></tr>` +
      rows.map((r) => `<tr data-id="${r.id}"><td><a href="#/submissions/${r.id}">${r.id}</a></td>
        ${admin || state.team ? `<td>${esc(r.user)}</td>` : ""}<td>${esc(r.problem)}</td>
        <td class="contest">${r.contest ? esc(r.contest) : '<span class="muted">practice</span>'}</td>
        <td class="hide-narrow">${esc(r.language)}</td>
        <td class="state">${r.state === "DONE" ? verdict(r.verdict) : verdict(null, r.state)}${
          r.mode !== "ranked" ? ` <span class="muted mode">${esc(r.mode)}</span>` : ""}${
          r.sanction ? ` <span class="muted">(${esc(r.sanction.kind === "ignore" ? "ignored" : "disqualified")})</span>` : ""}</td>
        <td class="num">${num(r.score)}</td><td class="num">${num(r.speedup)}</td>
        <td class="num hide-narrow">${num(r.time_ms)}</td>
        <td class="num hide-narrow">${num(r.memory_mb)}</td>
        <td class="hide-narrow">${when(r.created_at)}</td></tr>`).join("");
    return rows.some((r) => r.state !== "DONE");
  };
  if (await load()) every(1500, async () => { if (!(await load())) clearInterval(state.timer); });
}

function speedupChart(tests) {
  const timed = tests.filter((t) => typeof t.speedup === "number");
  if (!timed.length) return "";
  const max = Math.max(1, ...timed.map((t) => t.speedup));
  const width = 720, bar = 22, left = 140, height = timed.length * (bar + 6) + 24;
  const x = (v) => left + (v / max) * (width - left - 60);
  return `<h2>Speedup per test point</h2><svg class="chart" viewBox="0 0 ${width} ${height}"
    role="img" aria-label="speedup per test point">
    <line x1="${x(1)}" y1="0" x2="${x(1)}" y2="${height - 18}" stroke="#999" stroke-dasharray="4"/>
    <text x="${x(1)}" y="${height - 4}" font-size="11" text-anchor="middle">1× (baseline)</text>
    ${timed.map((t, i) => `<text x="${left - 6}" y="${i * (bar + 6) + 16}" font-size="12"
        text-anchor="end">${esc(t.name)}</text>
      <rect x="${left}" y="${i * (bar + 6)}" width="${x(t.speedup) - left}" height="${bar}"
        fill="${t.speedup >= 1 ? "#1a7f37" : "#cf222e"}"/>
      <text x="${x(t.speedup) + 4}" y="${i * (bar + 6) + 16}" font-size="12">${num(t.speedup, 3)}×</text>`).join("")}
    </svg>`;
}

function testsTable(tests) {
  return `<div class="scroll"><table><tr><th>test</th><th>verdict</th><th class="num">matched</th>
    <th class="num">max abs</th><th class="num">max rel</th><th class="hide-narrow">worst mismatches</th>
    <th class="num">time ms</th><th class="num">baseline ms</th><th class="num">speedup</th>
    <th class="num hide-narrow" title="an empty run_kernel, timed like yours">floor µs</th>
    <th class="num hide-narrow">spread</th><th class="num hide-narrow">GB/s</th>
    <th class="num hide-narrow">TFLOP/s</th></tr>
    ${tests.map((t) => `<tr><td>${esc(t.name)}${t.sample === false ? ' <span class="muted">(secret)</span>' : ""}</td>
      <td>${t.verdict ? verdict(t.verdict) : '<span class="muted">not run</span>'}</td>
      <td class="num">${num(t.matched_ratio, 6)}</td><td class="num">${num(t.max_abs_err, 3)}</td>
      <td class="num">${num(t.max_rel_err, 3)}</td>
      <td class="hide-narrow">${(t.worst || []).map((w) => `<code>[${esc(w.index.join(","))}] ${num(w.got, 5)} ≠ ${num(w.expected, 5)}</code>`).join("<br>")}
        ${t.verdict && t.verdict !== "AC" && t.message ? `<div class="error">${esc(t.message.split("\n").slice(-3).join("\n"))}</div>` : ""}</td>
      <td class="num">${num(t.time_ms)}</td><td class="num">${num(t.baseline_ms)}</td>
      <td class="num">${num(t.speedup, 3)}${t.resolvable === false ? `<div class="muted" title="the harness's own work per call does not fit in the judge's resolution of these calls: the point does not carry the score">not resolvable</div>` : ""}${t.counted_speedup != null ? `<div class="muted" title="${t.resolvable === false ? "no point of this judging is resolvable: each counts at the baseline's time" : "no single point carries the aggregate: the best point counts as the next best"}">counted ${num(t.counted_speedup, 3)}</div>` : ""}</td>
      <td class="num hide-narrow">${t.floor_ms != null ? num(1000 * t.floor_ms, 3) : "–"}</td>
      <td class="num hide-narrow">${t.rel_spread != null ? (100 * t.rel_spread).toFixed(1) + "%" : "–"}</td>
      <td class="num hide-narrow">${num(t.gbps)}</td><td class="num hide-narrow">${num(t.tflops)}</td></tr>`).join("")}
    </table></div>`;
}

// Organizers only (the API sends `applied` and `flags` to them): what actually ran.
function appliedPanel(r) {
  const a = r.applied, gpu = a.gpu_state || {};
  const state = (s) => s ? `${num(s.sm_clock_mhz)} MHz SM, ${num(s.memory_clock_mhz)} MHz memory, `
    + `${num(s.temperature_c)} °C, ${num(s.power_w)} W${(s.throttle_reasons || []).length
      ? `, throttled: ${esc(s.throttle_reasons.join(", "))}` : ""}` : "–";
  const rows = [
    ["device", `${esc(a.device_model || "–")} <span class="muted">${esc(a.device || "")}</span>`],
    ["sandbox", esc(a.sandbox || "–") + (a.warm_start == null ? "" : a.warm_start
      ? ' <span class="muted">(harnesses started ahead: a warm slot)</span>'
      : ' <span class="muted">(harnesses started for this judging)</span>')],
    ["toolchain", esc(a.toolchain || "–")],
    ["versions", esc(Object.entries(a.versions || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "–")],
    ["cache flush", a.timing_setup ? `${num(a.timing_setup.flush_bytes / 2 ** 20)} MiB`
      + (a.timing_setup.persisting_l2_reset ? ", persisting L2 reset" : "") : "–"],
    ["clock overhead (a warm empty call)", a.timing_setup && a.timing_setup.empty_call_ms != null
      ? `${num(1000 * a.timing_setup.empty_call_ms)} µs` : "–"],
    ["where the time went", r.phases ? esc(Object.entries(r.phases).map(([k, v]) =>
      `${k.replace("_", " ")} ${num(v, 3)} s`).join(", ")) + (r.overhead_s != null
      ? ` <span class="muted">(judge overhead ${num(r.overhead_s, 3)} s)</span>` : "") : "–"],
    ["GPU before timing", state(gpu.before)], ["GPU after timing", state(gpu.after)],
    ...Object.entries(a.gpu_memory || {}).map(([role, m]) => [`GPU memory, ${esc(role)}`,
      `peak ${num(m.peak_mb)} MiB` + (m.limit_mb ? ` of ${num(m.limit_mb)} MiB` : "")]),
    ["flags", esc((r.flags || []).join("; ") || "–")],
    ...(r.guard && r.guard.tool ? [[`${esc(r.guard.tool)} (an opinion, not the verdict)`,
      r.guard.error ? esc(r.guard.error) : (r.guard.hits || []).map((h) =>
        `<code>${esc(h.rule)}</code> ${esc(h.tier)} tier: ${esc(h.evidence)}`).join("<br>")
        || esc(r.guard.classification)]] : []),
  ];
  return `<h2>How it ran</h2><table class="applied">${rows.map(([k, v]) =>
    `<tr><th>${k}</th><td>${v}</td></tr>`).join("")}</table>`;
}

async function submissionPage(id) {
  const left = leaving();
  const load = async () => {
    const r = await api(`/api/submissions/${id}?highlight=true`);
    const history = await api(`/api/submissions/${id}/judgings`);
    const mine = await api(`/api/submissions?problem=${encodeURIComponent(r.problem)}`);
    if (left()) return false;
    view().innerHTML = `<h1>Submission ${r.id}</h1>
      <div class="cards">
        <div class="card">status<b>${r.state === "DONE" ? verdict(r.verdict) : verdict(null, r.state)}</b></div>
        ${r.queue ? `<div class="card" id="queue-place">place in the queue<b>${r.queue.position}</b>
          <span class="muted">${r.queue.running} running${r.queue.estimate_s === null ? ""
            : `, about ${Math.round(r.queue.estimate_s)} s to the verdict`}</span></div>` : ""}
        <div class="card">total score<b>${num(r.score)}</b></div>
        <div class="card">speedup<b>${num(r.speedup)}</b></div>
        <div class="card">time<b>${num(r.time_ms)} ms</b></div>
        <div class="card">memory<b>${num(r.memory_mb)} MB</b><span class="muted">${esc(r.memory_measure || "")}</span></div>
        <div class="card">judged in<b>${num(r.wall_s)} s</b></div>
        <div class="card">language<b>${esc(r.language)}</b></div>
        <div class="card" id="mode-card">mode<b>${esc(r.mode)}</b><span class="muted">${
          r.mode === "ranked" ? "counts on the boards" : r.mode === "test" ? "samples only, counted nowhere"
          : r.mode === "profile" ? "under Nsight Compute, counted nowhere" : "timed, counted nowhere"}</span></div>
        <div class="card" id="contest-card">contest<b>${r.contest ? esc(r.contest) : "–"}</b>
          <span class="muted">${r.contest ? "counts on its board" : "practice: outside any contest"}</span></div>
        <div class="card">problem<b><a href="#/problems/${esc(r.problem)}">${esc(r.problem)}</a></b>
          <span class="muted">version ${esc(r.problem_version || "–")}</span></div>
        <div class="card">judged by<b>${esc(r.worker || "–")}</b><span class="muted">${when(r.finished_at)}</span></div>
      </div>
      ${r.message ? `<p class="error">${esc(r.message)}</p>` : ""}
      ${r.held ? `<p class="error" id="held">Held for an organizer's review: `
        + `this result counts on the boards once an organizer clears it.</p>` : ""}
      ${r.decision === "disqualified" ? `<p class="error" id="held">Disqualified by an organizer: `
        + `this result counts nowhere.</p>` : ""}
      ${r.sanction ? `<p class="error" id="sanction">${sanctionNotice(r.sanction)}</p>` : ""}
      ${state.role === "admin" ? ignoreForm(r) : ""}
      ${r.sandbox === "process" ? `<p class="error">Judged without isolation (the process sandbox, `
        + `for development only): this result must not count in a contest.</p>` : ""}
      ${r.verdict === "CE" ? `<h2>Compile log</h2><pre>${esc(r.compile_log)}</pre>` : ""}
      ${r.profile && r.profile.point ? profilePanel(r) : ""}
      <h2>Special judge report</h2>${testsTable(r.tests || [])}
      <p><a id="csv" href="/api/submissions/${r.id}/results.csv" download>Download as CSV</a></p>
      ${speedupChart(r.tests || [])}
      ${r.applied ? appliedPanel(r) : ""}
      <h2>Judging history</h2><table><tr><th>judging</th><th>verdict</th><th class="num">score</th>
        <th>finished</th><th>rejudge reason</th></tr>
        ${history.map((h) => `<tr><td>${h.judging_id}</td><td>${h.state === "DONE" ? verdict(h.verdict) : verdict(null, h.state)}</td>
          <td class="num">${num(h.score)}</td><td>${when(h.finished_at)}</td>
          <td>${esc(h.rejudge_reason || "")}${h.valid === false ? ` <span class="muted">(${esc(h.rejudge_state)}: not counted)</span>` : ""}</td></tr>`).join("")}</table>
      <h2>Compare with…</h2>
      <form id="compare" class="row"><select id="other">${mine.filter((m) => m.id !== r.id)
        .map((m) => `<option value="${m.id}">#${m.id} ${esc(m.language)} ${esc(m.verdict || m.state)}</option>`).join("")}</select>
        <button class="secondary" type="submit">Compare test points</button></form>
      <h2>Source</h2><div class="source">${r.source_html || `<pre>${esc(r.source)}</pre>`}</div>`;
    $("#compare").onsubmit = (event) => {
      event.preventDefault();
      if ($("#other").value) location.hash = `#/compare/${r.id}/${$("#other").value}`;
    };
    const ignore = $("#ignore");
    if (ignore) ignore.onsubmit = async (event) => {
      event.preventDefault();
      const reason = $("#ignore input[name=reason]").value;
      try {
        if (r.sanction && r.sanction.kind === "ignore") {
          await api(`/api/sanctions/${r.sanction.id}/lift`, { method: "POST", body: { reason } });
        } else {
          await api("/api/sanctions", { method: "POST", body: { kind: "ignore", submission: r.id, reason } });
        }
        await load();
      } catch (e) { banner(e.message); }
    };
    return r.state !== "DONE" || history.some((h) => h.state !== "DONE");
  };
  if (await load()) every(1500, async () => { if (!(await load())) clearInterval(state.timer); });
}

function profilePanel(r) {
  const p = r.profile;
  return `<h2>Nsight Compute</h2><div id="profile"><p class="muted">Test point ${esc(p.point)}, one call
      of run_kernel.${p.report ? ` <a id="profile-report" href="/api/submissions/${r.id}/profile.ncu-rep" download>
      Download the report</a> (${num(p.report_bytes / 1024, 3)} KiB; open it in Nsight Compute)` : ""}</p>
    ${p.note ? `<p class="error">${esc(p.note)}</p>` : ""}
    <table><tr><th>kernel</th><th>section</th><th>metric</th><th class="num">average</th><th>unit</th></tr>
      ${(p.kernels || []).map((k) => `<tr><td>${esc(k["Kernel Name"])}</td><td>${esc(k["Section Name"] || "")}</td>
        <td>${esc(k["Metric Name"])}</td><td class="num">${esc(k.Average)}</td><td>${esc(k["Metric Unit"] || "")}</td></tr>`).join("")}
    </table></div>`;
}

function sanctionNotice(s) {
  if (s.kind === "ignore") return `Ignored by the organizers: ${esc(s.reason)}. It stays here and counts nowhere.`;
  return `Disqualified from contest ${esc(s.contest)} by the organizers: ${esc(s.reason)}. `
    + "Results there count nowhere.";
}

function ignoreForm(r) {
  const ignored = r.sanction && r.sanction.kind === "ignore";
  return `<form id="ignore" class="row"><input name="reason" required size="50"
      placeholder="${ignored ? "why it counts again" : "why it counts nowhere (its author reads this)"}">
    <button class="secondary" type="submit">${ignored ? "Lift the ignore" : "Ignore this submission"}</button></form>`;
}

async function comparePage(a, b) {
  const [x, y] = await Promise.all([api(`/api/submissions/${a}`), api(`/api/submissions/${b}`)]);
  const names = [...new Set([...(x.tests || []), ...(y.tests || [])].map((t) => t.name))];
  const find = (r, n) => (r.tests || []).find((t) => t.name === n) || {};
  view().innerHTML = `<h1>#${x.id} (${esc(x.language)}) vs #${y.id} (${esc(y.language)})</h1>
    <table id="side-by-side"><tr><th>test point</th><th>#${x.id}</th><th class="num">ms</th>
      <th class="num">speedup</th><th>#${y.id}</th><th class="num">ms</th><th class="num">speedup</th>
      <th class="num">change</th></tr>
    ${names.map((n) => { const p = find(x, n), q = find(y, n);
      const change = typeof p.time_ms === "number" && typeof q.time_ms === "number"
        ? `${((q.time_ms / p.time_ms - 1) * 100).toFixed(1)}%` : "–";
      return `<tr><td>${esc(n)}</td><td>${verdict(p.verdict)}</td><td class="num">${num(p.time_ms)}</td>
        <td class="num">${num(p.speedup)}</td><td>${verdict(q.verdict)}</td><td class="num">${num(q.time_ms)}</td>
        <td class="num">${num(q.speedup)}</td><td class="num">${change}</td></tr>`; }).join("")}
    <tr><th>total</th><td>${verdict(x.verdict)}</td><td class="num">${num(x.time_ms)}</td>
      <td class="num">${num(x.speedup)}</td><td>${verdict(y.verdict)}</td><td class="num">${num(y.time_ms)}</td>
      <td class="num">${num(y.speedup)}</td><td></td></tr></table>
    <p class="muted">From the command line: <code>kjudge status ${x.id} --compare ${y.id}</code></p>`;
}

// Each leading row's total over the contest, as steps (from the board's `series`).
function scoreChart(board, contest) {
  const rows = board.rows.filter((r) => r.series && r.series.length);
  if (!rows.length) return "";
  const times = rows.flatMap((r) => r.series.map(([at]) => Date.parse(at)));
  const start = contest && contest.starts_at ? Date.parse(contest.starts_at) : Math.min(...times);
  const endsAt = contest && contest.ends_at ? Date.parse(contest.ends_at) : Infinity;
  const end = Math.max(Math.min(Date.now(), endsAt), ...times);
  const top = Math.max(...rows.map((r) => r.total), 1);
  const width = 720, height = 260, left = 50, bottom = 24, right = 120;
  const x = (t) => left + ((t - start) / Math.max(end - start, 1)) * (width - left - right);
  const y = (v) => (height - bottom) - (v / top) * (height - bottom - 10);
  const colours = ["#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#1b7c83", "#e16f24",
                   "#6e7781", "#a40e26", "#116329"];
  // the end labels, pushed apart where totals are close (rows come sorted by total)
  const labelY = [];
  rows.forEach((r, i) => {
    const wanted = y(r.total) + 4;
    labelY.push(i && wanted < labelY[i - 1] + 12 ? labelY[i - 1] + 12 : wanted);
  });
  const lines = rows.map((r, i) => {
    const colour = colours[i % colours.length];
    let d = `M${x(start).toFixed(1)},${y(0).toFixed(1)}`;
    for (const [at, total] of r.series) d += ` H${x(Date.parse(at)).toFixed(1)} V${y(total).toFixed(1)}`;
    d += ` H${x(end).toFixed(1)}`;
    return `<path class="series" d="${d}" fill="none" stroke="${colour}" stroke-width="2"/>
      <text x="${x(end) + 4}" y="${labelY[i].toFixed(1)}" font-size="11" fill="${colour}">${esc(r.name)}</text>`;
  }).join("");
  return `<h2>Score over the contest</h2><svg class="chart" id="score-chart" viewBox="0 0 ${width} ${height}"
    role="img" aria-label="each leading row's total score over time">
    <line x1="${left}" y1="${y(0)}" x2="${width - right}" y2="${y(0)}" stroke="#999"/>
    <line x1="${left}" y1="${y(0)}" x2="${left}" y2="10" stroke="#999"/>
    <text x="${left - 6}" y="${y(top) + 4}" font-size="11" text-anchor="end">${num(top, 3)}</text>
    <text x="${left - 6}" y="${y(0) + 4}" font-size="11" text-anchor="end">0</text>
    <text x="${left}" y="${height - 6}" font-size="11">${esc(new Date(start).toLocaleTimeString())}</text>
    <text x="${width - right}" y="${height - 6}" font-size="11" text-anchor="end">${esc(new Date(end).toLocaleTimeString())}</text>
    ${lines}</svg>`;
}

async function leaderboardPage() {
  const contests = await api("/api/contests");
  const open = state.name ? contests : contests.filter((c) => c.public);
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const fallback = (open.find((c) => c.state === "running") || open[open.length - 1] || {}).slug;
  // the running contest's board first (else the latest); "All submissions" is one choice away
  const chosen = params.has("contest") ? params.get("contest") : (fallback || "");
  if (!state.name && !chosen) {
    view().innerHTML = `<h1>Leaderboard</h1><p>No contest has a public board. <a href="#/signin">Sign in</a> to see yours.</p>`;
    return;
  }
  const contest = contests.find((c) => c.slug === chosen);
  const options = (state.name ? [["", "All submissions"]] : []).concat(open.map((c) => [c.slug, c.title]));
  const left = leaving();
  const load = async () => {
    const board = await api(`/api/leaderboard${chosen ? `?contest=${encodeURIComponent(chosen)}` : ""}`);
    if (left()) return;
    const me = board.me, who = board.teams ? "team" : "user";
    const pending = (r, p) => (r.pending && r.pending[p]) ? ` <span class="pending" title="submitted since the freeze">+${r.pending[p]}?</span>` : "";
    view().innerHTML = `<h1>Leaderboard</h1>
      <div class="row"><label for="board-choice">Board</label><select id="board-choice">${options.map(([slug, title]) =>
        `<option value="${esc(slug)}" ${slug === chosen ? "selected" : ""}>${esc(title)}</option>`).join("")}</select></div>
      ${board.frozen_at ? `<p class="banner" id="frozen-note">Frozen since ${when(board.frozen_at)}: this is the board as it stood then;
        results of later submissions are shown at the end.${me && me.live ? " Your own results are live below." : ""}</p>` : ""}
      ${board.shown === "live" && contest && contest.frozen ? `<p class="muted" id="live-note">Frozen for contestants and visitors; you see it live.</p>` : ""}
      ${me ? `<div class="cards"><div class="card">my rank<b>${me.rank ?? "–"}</b></div>
        <div class="card">my total<b>${num(me.total)}</b></div>
        ${me.live ? `<div class="card" id="my-live">mine now<b>${num(me.live.total)}</b></div>` : ""}</div>` : ""}
      <div class="scroll"><table id="board"><tr><th class="num">rank</th><th>${who}</th><th class="num">total</th>
        ${board.problems.map((p) => `<th class="num" title="${esc(p)}">${esc(p.length > 14 ? `${p.slice(0, 13)}…` : p)}</th>`).join("")}</tr>
      ${board.rows.map((r) => `<tr class="${me && r.name === me.name && !!r.team === me.team ? "me" : ""}"><td class="num">${r.rank ?? "–"}</td>
        <td>${esc(r.name)}${r.members ? ` <span class="muted">${esc(r.members.join(", "))}</span>` : ""}</td><td class="num">${num(r.total)}</td>
        ${board.problems.map((p) => `<td class="num">${num(r.problems[p])}${pending(r, p)}</td>`).join("")}</tr>`).join("")}
      </table></div>${scoreChart(board, contest)}`;
    $("#board-choice").onchange = () => {
      location.hash = `#/leaderboard?contest=${encodeURIComponent($("#board-choice").value)}`;
    };
    return true;
  };
  await load();
  every(4000, load);
}

async function adminPage() {
  view().innerHTML = `<h1>Organizer</h1>
    <h2>Queue and workers</h2><div id="queue"></div>
    <h2>Review</h2><p class="muted">Results held off the boards until you decide: a timer the
      judge's clock caught, a time under the floor or the roofline, a hard-tier KernelGuard rule
      (an opinion to check, not a verdict). Clear: it counts as judged. Disqualify: it counts nowhere.</p>
      <table id="review"></table>
    <h2>Sanctions</h2><p class="muted">Each with a reason its subject reads; lifted, never deleted.
      Ignore: a submission counts nowhere. Disqualify: a user's or team's results in a contest count
      nowhere and they submit there no more. Ban: a user submits no more. Every action here is in the
      <a href="#/audit">audit log</a>.</p>
    <form id="sanction" class="row"><select name="kind"><option value="disqualify">Disqualify</option>
        <option value="ban">Ban</option><option value="ignore">Ignore a submission</option></select>
      <input name="user" placeholder="user"><input name="team" placeholder="or team">
      <input name="contest" placeholder="contest"><input name="submission" placeholder="submission id" size="10">
      <input name="reason" placeholder="reason (required)" required size="40">
      <button type="submit">Impose</button></form><div id="sanction-result"></div>
    <table id="sanctions"></table>
    <h2>Rejudge</h2>
    <form id="rejudge" class="stack">
      <div class="row"><input name="submission_ids" placeholder="submission ids: 3 4 9">
        <input name="problem" placeholder="problem"><input name="user" placeholder="user">
        <input name="verdict" placeholder="verdict"><input name="since" type="datetime-local"></div>
      <input name="reason" placeholder="reason (required)" required size="60">
      <label><input type="checkbox" name="staged"> staged: judged aside; nothing counts until you
        read its diff and apply it</label>
      <button type="submit">Rejudge</button><div id="rejudge-result"></div></form>
    <table id="rejudges"></table>
    <h2>Problems</h2><button id="reload" class="secondary">Reload problem folders</button>
    <div id="reload-result"></div>
    <h2>Contests</h2><table id="contests"></table>
    <details id="contest-editor"><summary id="contest-editor-title">Create a contest</summary>
      <form id="contest-form" class="stack">
        <p class="muted">Times are your browser's local time. Edit fills the form with a
          contest's fields: what you empty is cleared. The judge names the field it cannot take
          (a freeze after the end, a language the device cannot run).</p>
        <div class="row"><input name="slug" placeholder="slug: cup-2026" required pattern="[a-z0-9_-]{1,64}">
          <input name="title" placeholder="title" size="30"></div>
        <div class="row"><input name="problems" placeholder="problems: vector_add, softmax" size="40">
          <input name="languages" placeholder="languages (empty: each problem's own)" size="30">
          <input name="device" placeholder="device: cpu, cuda.h100" size="14"></div>
        <div class="row"><label>starts <input name="starts_at" type="datetime-local"></label>
          <label>freeze <input name="freeze_at" type="datetime-local"></label>
          <label>ends <input name="ends_at" type="datetime-local"></label>
          <label>thaw <input name="thaw_at" type="datetime-local"></label></div>
        <div class="row"><label>per-user window (min) <input name="window_min" type="number" min="1" size="6"></label>
          <label>ranked per hour <input name="per_hour" type="number" min="0" size="5"></label>
          <label>ranked in all <input name="per_contest" type="number" min="0" size="5"></label></div>
        <div class="row"><label><input type="checkbox" name="public"> public (listed before it starts; board without signing in)</label>
          <label><input type="checkbox" name="teams"> ranked by team</label>
          <label><input type="checkbox" name="system_test" checked> system test at the end</label></div>
        <div class="row"><button type="submit" id="contest-save">Create</button>
          <button type="button" class="secondary" id="contest-new">New contest</button></div>
        <div id="contest-result"></div>
      </form></details>
    <h2>Users</h2><form id="adduser" class="row"><input name="name" placeholder="name" required>
      <input name="team" placeholder="team (optional)">
      <label><input type="checkbox" name="admin"> admin</label><button type="submit">Add user</button></form>
    <div id="user-result"></div>
    <details id="import"><summary>Import users from a CSV file</summary>
      <form id="import-form" class="stack">
        <p class="muted">A header row naming <code>name</code> and any of <code>team</code>, <code>role</code>
          (contestant or admin), <code>password</code> (empty: one is generated). All or nothing.</p>
        <input id="import-file" type="file" accept=".csv,text/csv">
        <textarea id="import-text" spellcheck="false" placeholder="name,team&#10;alice,red"></textarea>
        <label><input type="checkbox" id="import-skip"> leave users that exist as they are</label>
        <button type="submit">Import</button><div id="import-result"></div>
      </form></details>
    <table id="users"></table>`;
  const loadQueue = async () => {
    const q = await api("/api/queue");
    $("#queue").innerHTML = `<table><tr><th>queue</th><th class="num">queued</th><th class="num">running</th>
      <th>oldest waiting</th></tr>${Object.entries(q.queues).map(([name, e]) => `<tr><td>${esc(name)}</td>
      <td class="num">${e.queued}</td><td class="num">${e.running}</td><td>${when(e.oldest_waiting)}</td></tr>`).join("")
      || '<tr><td colspan="4" class="muted">nothing waiting</td></tr>'}</table>
      <table><tr><th>worker</th><th>last heartbeat</th></tr>${q.workers.map((w) =>
        `<tr><td>${esc(w.name)}</td><td>${when(w.last_seen)}</td></tr>`).join("")}</table>`;
  };
  const loadReview = async () => {
    const rows = await api("/api/review");
    const where = (h) => h.line ? `line ${h.line}` : h.test ? `test ${esc(h.test)}` : "";
    $("#review").innerHTML = `<tr><th>#</th><th>user</th><th>problem</th><th>verdict</th>
      <th>flagged</th><th>judged</th><th>decision</th></tr>` + (rows.map((r) => `<tr data-id="${r.submission_id}">
      <td><a href="#/submissions/${r.submission_id}">${r.submission_id}</a></td><td>${esc(r.user)}</td>
      <td>${esc(r.problem)}</td><td>${esc(r.verdict || "–")}</td>
      <td class="holds">${r.holds.map((h) => `<div><b>${esc(h.by)}</b> ${where(h)}: ${esc(h.what)}</div>`).join("")}</td>
      <td>${when(r.finished_at)}</td>
      <td>${r.decision ? `<span class="decision">${esc(r.decision)}</span> ` : '<span class="muted">held</span> '}
        <button data-decide="cleared" data-judging="${r.judging_id}" class="secondary">Clear</button>
        <button data-decide="disqualified" data-judging="${r.judging_id}" class="secondary">Disqualify</button></td></tr>`).join("")
      || '<tr><td colspan="7" class="muted">nothing to review</td></tr>');
    for (const button of $("#review").querySelectorAll("[data-decide]")) {
      button.onclick = async () => {
        await api(`/api/review/${button.dataset.judging}`, { method: "POST",
          body: { decision: button.dataset.decide } });
        await loadReview();
      };
    }
  };
  const loadSanctions = async () => {
    const rows = await api("/api/sanctions");
    const target = (s) => s.submission ? `<a href="#/submissions/${s.submission}">submission ${s.submission}</a>`
      : `${s.team ? "team" : "user"} ${esc(s.team || s.user)}${s.contest ? ` in ${esc(s.contest)}` : ""}`;
    $("#sanctions").innerHTML = `<tr><th>#</th><th>sanction</th><th>on</th><th>reason</th><th>by</th><th>since</th><th></th></tr>`
      + (rows.map((s) => `<tr data-sanction="${s.id}"><td>${s.id}</td><td>${esc(s.kind)}</td><td>${target(s)}</td>
        <td>${esc(s.reason)}</td><td>${esc(s.created_by || "")}</td><td>${when(s.created_at)}</td>
        <td><form class="row lift" data-lift="${s.id}"><input name="reason" placeholder="why lift it" required>
          <button class="secondary" type="submit">Lift</button></form></td></tr>`).join("")
      || '<tr><td colspan="7" class="muted">no sanctions in force</td></tr>');
    for (const form of view().querySelectorAll("[data-lift]")) {
      form.onsubmit = async (event) => {
        event.preventDefault();
        try {
          await api(`/api/sanctions/${form.dataset.lift}/lift`, { method: "POST",
            body: { reason: new FormData(form).get("reason") } });
          await loadSanctions();
        } catch (e) { $("#sanction-result").innerHTML = `<p class="error">${esc(e.message)}</p>`; }
      };
    }
  };
  $("#sanction").onsubmit = async (event) => {
    event.preventDefault();
    const form = Object.fromEntries(new FormData(event.target));
    const body = { kind: form.kind, reason: form.reason };
    for (const key of ["user", "team", "contest"]) if (form[key]) body[key] = form[key];
    if (form.submission) body.submission = Number(form.submission);
    try {
      const s = await api("/api/sanctions", { method: "POST", body });
      $("#sanction-result").innerHTML = `<p>Sanction ${s.id} in force.</p>`;
      event.target.reset();
      await loadSanctions();
    } catch (e) { $("#sanction-result").innerHTML = `<p class="error">${esc(e.message)}</p>`; }
  };
  const loadUsers = async () => {
    const users = await api("/api/users");
    $("#users").innerHTML = `<tr><th>user</th><th>team</th><th>role</th><th>since</th><th></th></tr>` + users.map((u) =>
      `<tr data-user="${esc(u.name)}"><td>${esc(u.name)}</td><td>${esc(u.team || "")}</td><td>${esc(u.role)}</td>
        <td>${when(u.created_at)}</td><td><button class="secondary" data-reset="${esc(u.name)}">Reset password</button></td></tr>`).join("");
    for (const button of view().querySelectorAll("[data-reset]")) {
      button.onclick = async () => {
        const r = await api(`/api/users/${encodeURIComponent(button.dataset.reset)}/password`, { method: "POST" });
        $("#user-result").innerHTML = `<p>New password for ${esc(r.name)} (shown once): <code class="password">${esc(r.password)}</code></p>`;
      };
    }
  };
  const loadContests = async () => {
    const contests = await api("/api/contests");
    $("#contests").innerHTML = `<tr><th>contest</th><th>state</th><th>board</th><th>freeze</th><th>thaw</th><th></th></tr>` +
      (contests.map((c) => `<tr data-contest="${esc(c.slug)}"><td>${esc(c.title)} <span class="muted">${esc(c.slug)}</span></td>
        <td>${esc(c.state.replace("_", " "))}</td><td>${c.public ? "public" : "signed-in users"}${c.teams ? ", by team" : ""}</td>
        <td>${c.frozen ? "<b>frozen</b> since " : ""}${when(c.freeze_at)}</td><td>${c.unfrozen_at ? `published ${when(c.unfrozen_at)}` : when(c.thaw_at)}</td>
        <td>${c.frozen ? `<button data-unfreeze="${esc(c.slug)}">Publish the final board</button>` : ""}
          <button class="secondary" data-systest="${esc(c.slug)}" title="judge every row's counted submissions again on fresh seeds (runs by itself when the contest ends${c.system_test ? "" : ": off for this contest"})">System test</button>
          <button class="secondary" data-systest-show="${esc(c.slug)}">Before / after</button>
          <a class="ccs" href="/api/ccs/contests/${esc(c.slug)}/event-feed" download="event-feed.ndjson"
            title="the ICPC CCS Contest API's event feed, for the resolver (base URL /api/ccs)">Event feed</a>
          <button class="secondary" data-edit="${esc(c.slug)}">Edit</button>
          <form class="row extra" data-extra="${esc(c.slug)}"><input name="user" placeholder="user" size="8" required>
            <input name="minutes" type="number" min="0" placeholder="extra min" size="5" required>
            <button class="secondary" type="submit">Extra time</button></form></td></tr>`).join("")
      || '<tr><td colspan="6" class="muted">no contests</td></tr>') + '<tr><td colspan="6" id="systest"></td></tr>';
    for (const button of view().querySelectorAll("[data-edit]")) {
      button.onclick = () => editContest(contests.find((c) => c.slug === button.dataset.edit));
    }
    for (const button of view().querySelectorAll("[data-unfreeze]")) {
      button.onclick = async () => {
        await api(`/api/contests/${encodeURIComponent(button.dataset.unfreeze)}/unfreeze`, { method: "POST" });
        await loadContests();
      };
    }
    const showSystemTest = async (slug, start) => {
      try {
        const path = `/api/contests/${encodeURIComponent(slug)}/system-test`;
        const r = await api(path, start ? { method: "POST", body: {} } : {});
        const score = (v) => v == null ? "–" : num(v);
        $("#systest").innerHTML = `<p>System test ${r.id} of ${esc(slug)} (${esc(r.reason)}): ${r.done} of ${r.total} judgings done</p>
          <table><tr><th>row</th><th class="num">rank before</th><th class="num">rank after</th>
          <th class="num">total before</th><th class="num">total after</th><th>per problem (before → after)</th></tr>
          ${r.rows.map((row) => `<tr><td>${esc(row.name)}</td><td class="num">${row.before.rank ?? "–"}</td>
            <td class="num">${row.after.rank ?? "–"}</td><td class="num">${num(row.before.total)}</td>
            <td class="num">${num(row.after.total)}</td><td>${Object.entries(row.problems).map(([p, [b, a]]) =>
              `${esc(p)} ${score(b)} → ${score(a)}`).join("; ")}</td></tr>`).join("")}</table>`;
      } catch (e) { $("#systest").innerHTML = `<p class="error">${esc(e.message)}</p>`; }
    };
    for (const form of view().querySelectorAll("[data-extra]")) {
      form.onsubmit = async (event) => {
        event.preventDefault();
        const data = new FormData(form);
        try {
          const p = await api(`/api/contests/${encodeURIComponent(form.dataset.extra)}/participants/${
            encodeURIComponent(data.get("user"))}`, { method: "PUT", body: { extra_s: Number(data.get("minutes")) * 60 } });
          $("#systest").innerHTML = `<p id="extra-result">${esc(p.user)} in ${esc(p.contest)}: ${p.extra_s / 60} min extra,
            ending ${when(p.ends_at)}</p>`;
        } catch (e) { $("#systest").innerHTML = `<p class="error">${esc(e.message)}</p>`; }
      };
    }
    for (const button of view().querySelectorAll("[data-systest]")) {
      button.onclick = () => showSystemTest(button.dataset.systest, true);
    }
    for (const button of view().querySelectorAll("[data-systest-show]")) {
      button.onclick = () => showSystemTest(button.dataset.systestShow, false);
    }
  };
  $("#import-file").onchange = async () => {
    const file = $("#import-file").files[0];
    if (file) $("#import-text").value = await file.text();
  };
  $("#import-form").onsubmit = async (event) => {
    event.preventDefault();
    try {
      const r = await api("/api/users/import", { method: "POST",
        body: { csv: $("#import-text").value, skip_existing: $("#import-skip").checked } });
      const link = URL.createObjectURL(new Blob([r.passwords_csv], { type: "text/csv" }));
      $("#import-result").innerHTML = `<p>Created ${r.created.length} users; their passwords are shown this once.
        <a href="${link}" download="passwords.csv">Download passwords.csv</a></p>
        <table id="imported"><tr><th>user</th><th>team</th><th>role</th><th>password</th></tr>${r.created.map((c) =>
          `<tr><td>${esc(c.name)}</td><td>${esc(c.team || "")}</td><td>${esc(c.role)}</td><td><code>${esc(c.password)}</code></td></tr>`).join("")}</table>`;
      await loadUsers();
    } catch (e) { $("#import-result").innerHTML = `<pre class="error">${esc(e.message)}</pre>`; }
  };
  $("#rejudge").onsubmit = async (event) => {
    event.preventDefault();
    const form = Object.fromEntries(new FormData(event.target));
    const body = { reason: form.reason };
    if (form.submission_ids) body.submission_ids = form.submission_ids.split(/[\s,]+/).filter(Boolean).map(Number);
    for (const key of ["problem", "user", "verdict"]) if (form[key]) body[key] = form[key];
    if (form.since) body.since = new Date(form.since).toISOString();
    if (form.staged) body.staged = true;
    try {
      const r = await api("/api/rejudge", { method: "POST", body });
      const left = leaving();
      const show = async () => {
        const p = await api(`/api/rejudge/${r.id}`);
        if (left()) return false;
        $("#rejudge-result").innerHTML = `<p id="rejudge-progress">Rejudge ${p.id}: ${p.done} of ${p.total} done</p>`;
        if (p.pending === 0 && p.state === "staged") await showDiff(p.id);
        return p.pending > 0;
      };
      await loadRejudges();
      if (await show()) every(1500, async () => { await loadQueue(); if (!(await show())) { clearInterval(state.timer); await loadRejudges(); } });
    } catch (e) { $("#rejudge-result").innerHTML = `<p class="error">${esc(e.message)}</p>`; }
  };
  const result = (r) => r ? `${esc(r.verdict || "–")} ${num(r.score)}` : "–";
  const showDiff = async (id) => {
    const d = await api(`/api/rejudge/${id}/diff`);
    $("#rejudge-result").innerHTML = `<div id="rejudge-diff"><p>Rejudge ${d.id} (<b class="rejudge-state">${esc(d.state)}</b>:
        ${esc(d.reason)}): ${d.changed.length} changed, ${d.unchanged} unchanged, ${d.pending} still judging
        ${d.dropped ? `, ${d.dropped} dropped` : ""}</p>
      <table class="changed"><tr><th>#</th><th>user</th><th>problem</th><th>before</th><th>after</th></tr>
        ${d.changed.map((c) => `<tr><td><a href="#/submissions/${c.submission}">${c.submission}</a></td>
          <td>${esc(c.user)}</td><td>${esc(c.problem)}</td><td>${result(c.before)}</td><td>${result(c.after)}</td></tr>`).join("")
          || '<tr><td colspan="5" class="muted">no result changes</td></tr>'}</table>
      ${d.boards.map((b) => `<h3>Board: ${esc(b.contest || "all submissions")}</h3>
        <table class="moved"><tr><th>row</th><th class="num">rank</th><th class="num">total</th></tr>
        ${b.rows.map((row) => `<tr><td>${esc(row.name)}</td><td class="num">${row.before.rank ?? "–"} → ${row.after.rank ?? "–"}</td>
          <td class="num">${num(row.before.total)} → ${num(row.after.total)}</td></tr>`).join("")
          || '<tr><td colspan="3" class="muted">no row moves</td></tr>'}</table>`).join("")}
      ${d.state === "staged" ? `<p><button id="rejudge-apply" ${d.pending ? "disabled" : ""}>Apply: these become the results</button>
        <button id="rejudge-cancel" class="secondary">Cancel: none of it counts</button></p>` : ""}</div>`;
    for (const [button, action] of [["#rejudge-apply", "apply"], ["#rejudge-cancel", "cancel"]]) {
      const el = $(button);
      if (el) el.onclick = async () => {
        try {
          await api(`/api/rejudge/${id}/${action}`, { method: "POST" });
          await Promise.all([showDiff(id), loadRejudges()]);
        } catch (e) { banner(e.message); }
      };
    }
  };
  const loadRejudges = async () => {
    const rows = await api("/api/rejudges?limit=20");
    $("#rejudges").innerHTML = rows.length ? `<tr><th>#</th><th>reason</th><th>state</th><th class="num">done</th><th>when</th><th></th></tr>`
      + rows.map((r) => `<tr data-rejudge="${r.id}"><td>${r.id}</td><td>${esc(r.reason)}</td><td>${esc(r.state)}</td>
        <td class="num">${r.done} / ${r.total}</td><td>${when(r.created_at)}</td>
        <td><button class="secondary" data-diff="${r.id}">Diff</button></td></tr>`).join("") : "";
    for (const button of view().querySelectorAll("[data-diff]")) {
      button.onclick = () => showDiff(button.dataset.diff).catch((e) => banner(e.message));
    }
  };
  $("#reload").onclick = async () => {
    try {
      const r = await api("/api/problems/reload", { method: "POST" });
      $("#reload-result").innerHTML = `<p>Loaded: ${esc(r.loaded.join(", "))}</p>` +
        Object.entries(r.invalid).map(([slug, issues]) => `<p class="error">${esc(slug)}:\n${esc(issues.join("\n"))}</p>`).join("");
    } catch (e) { $("#reload-result").innerHTML = `<p class="error">${esc(e.message)}</p>`; }
  };
  $("#adduser").onsubmit = async (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    try {
      const u = await api("/api/users", { method: "POST", body: { name: form.get("name"),
        team: form.get("team") || null, admin: form.get("admin") === "on" } });
      $("#user-result").innerHTML = `<p>${esc(u.name)}'s password (shown once): <code class="password">${esc(u.password)}</code>,
        API token: <code>${esc(u.token)}</code></p>`;
      await loadUsers();
    } catch (e) { $("#user-result").innerHTML = `<p class="error">${esc(e.message)}</p>`; }
  };
  const editContest = (c) => {  // the form filled with a contest's fields (null: a new one)
    const form = $("#contest-form");
    form.reset();
    form.dataset.editing = c ? c.slug : "";
    form.otherQuotas = c ? { ...(c.quotas || {}) } : {};  // modes the form does not show, kept
    form.slug.readOnly = !!c;
    $("#contest-editor-title").textContent = c ? `Edit contest ${c.slug}` : "Create a contest";
    $("#contest-save").textContent = c ? "Save" : "Create";
    $("#contest-result").innerHTML = "";
    if (c) {
      form.slug.value = c.slug; form.title.value = c.title;
      form.problems.value = c.problems.join(", ");
      form.languages.value = (c.languages || []).join(", ");
      form.device.value = c.device;
      for (const name of ["starts_at", "freeze_at", "ends_at", "thaw_at"]) form[name].value = localInput(c[name]);
      form.window_min.value = c.window_s ? c.window_s / 60 : "";
      const ranked = (c.quotas || {}).ranked || {};
      form.per_hour.value = ranked.per_hour ?? ""; form.per_contest.value = ranked.per_contest ?? "";
      form.public.checked = c.public; form.teams.checked = c.teams; form.system_test.checked = c.system_test;
    }
    $("#contest-editor").open = true;
  };
  $("#contest-new").onclick = () => editContest(null);
  $("#contest-form").onsubmit = async (event) => {
    event.preventDefault();
    const form = event.target, editing = form.dataset.editing;
    const list = (name) => form[name].value.split(",").map((x) => x.trim()).filter(Boolean);
    const body = { title: form.title.value || form.slug.value, problems: list("problems"),
      public: form.public.checked, teams: form.teams.checked, system_test: form.system_test.checked };
    if (form.device.value) body.device = form.device.value.trim();
    body.languages = list("languages").length ? list("languages") : null;
    for (const name of ["starts_at", "freeze_at", "ends_at", "thaw_at"]) {
      body[name] = form[name].value ? new Date(form[name].value).toISOString() : null;
    }
    body.window_s = form.window_min.value ? Math.round(form.window_min.value * 60) : null;
    const cap = (name) => form[name].value === "" ? null : Number(form[name].value);
    const ranked = { per_hour: cap("per_hour"), per_contest: cap("per_contest") };
    body.quotas = { ...(form.otherQuotas || {}) };
    delete body.quotas.ranked;
    if (ranked.per_hour !== null || ranked.per_contest !== null) body.quotas.ranked = ranked;
    try {
      if (editing) {
        await api(`/api/contests/${encodeURIComponent(editing)}`, { method: "PATCH", body });
      } else {
        if (!body.problems.length) throw new Error("problems: name at least one");
        for (const name of Object.keys(body)) if (body[name] === null) delete body[name];
        await api("/api/contests", { method: "POST", body: { slug: form.slug.value, ...body } });
      }
      $("#contest-result").innerHTML = `<p id="contest-saved">Contest ${esc(editing || form.slug.value)} saved.</p>`;
      await loadContests();
    } catch (e) { $("#contest-result").innerHTML = `<p class="error">${esc(e.message)}</p>`; }
  };
  await Promise.all([loadQueue(), loadReview(), loadSanctions(), loadRejudges(), loadUsers(),
    loadContests()]);
}

function localInput(iso) {  // an ISO time as a datetime-local input's value, in local time
  if (!iso) return "";
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

async function clarificationsPage() {
  const admin = state.role === "admin";
  const [rows, problems, contests] = await Promise.all([api("/api/clarifications"),
    api("/api/problems"), api("/api/contests")]);
  const options = (items, empty) => `<option value="">${empty}</option>` + items.map((x) =>
    `<option value="${esc(x.slug)}">${esc(x.title || x.slug)}</option>`).join("");
  const about = (c) => [c.contest, c.problem].filter(Boolean).map(esc).join(" · ") || "general";
  view().innerHTML = `<h1>Clarifications</h1>
    <form id="ask" class="stack"><div class="row"><select name="problem">${options(problems, "any problem")}</select>
        <select name="contest">${options(contests, "no contest")}</select></div>
      <textarea name="text" required placeholder="${admin ? "an announcement to every contestant" : "your question to the organizers"}"></textarea>
      <button type="submit">${admin ? "Announce" : "Ask"}</button><div id="ask-result"></div></form>
    <div id="clars">${rows.map((c) => `<div class="clar${c.unread ? " is-unread" : ""}" data-clar="${c.id}">
        <div class="muted">#${c.id} · ${about(c)} · ${c.announcement ? "announcement"
          : c.answer ? (c.public ? "answered to everyone" : "answered") : "not answered yet"}
          ${c.asked_by ? ` · from ${esc(c.asked_by)}` : ""} · ${when(c.answered_at || c.created_at)}</div>
        ${c.question ? `<p><b>Q:</b> ${esc(c.question)}</p>` : ""}
        ${c.answer ? `<p class="answer"><b>${c.announcement ? "" : "A: "}</b>${esc(c.answer)}</p>` : ""}
        ${admin && c.question ? `<form class="stack answer-form" data-answer="${c.id}">
          <textarea name="text" required placeholder="the answer">${esc(c.answer || "")}</textarea>
          <label><input type="checkbox" name="public" ${c.public ? "checked" : ""}> to everyone (the asker's name is not shown)</label>
          <button type="submit" class="secondary">${c.answer ? "Answer again" : "Answer"}</button></form>` : ""}
      </div>`).join("") || '<p class="muted">No clarifications yet.</p>'}</div>`;
  $("#ask").onsubmit = async (event) => {
    event.preventDefault();
    const form = Object.fromEntries(new FormData(event.target));
    const body = { text: form.text };
    if (form.problem) body.problem = form.problem;
    if (form.contest) body.contest = form.contest;
    try {
      await api(admin ? "/api/announcements" : "/api/clarifications", { method: "POST", body });
      await clarificationsPage();
    } catch (e) { $("#ask-result").innerHTML = `<p class="error">${esc(e.message)}</p>`; }
  };
  for (const form of view().querySelectorAll("[data-answer]")) {
    form.onsubmit = async (event) => {
      event.preventDefault();
      const data = new FormData(form);
      try {
        await api(`/api/clarifications/${form.dataset.answer}/answer`, { method: "POST",
          body: { text: data.get("text"), public: data.get("public") === "on" } });
        await clarificationsPage();
        await showUnread();
      } catch (e) { banner(e.message); }
    };
  }
  // read on this page: the strip on every page clears
  if (!admin && rows.some((c) => c.unread)) {
    await api("/api/clarifications/read", { method: "POST", body: {} });
    await showUnread();
  }
}

async function auditPage() {
  view().innerHTML = `<h1>Audit log</h1><p class="muted">Every organizer's action, newest first: sanctions,
      rejudges, review decisions, system tests, contests' settings, problem reloads, accounts.
      From the command line: <code>kjudge audit</code>.</p>
    <form id="audit-filter" class="row"><input name="action" placeholder="action starts with, e.g. sanction">
      <input name="actor" placeholder="organizer"><button type="submit">Filter</button></form>
    <table id="audit"></table><button id="audit-older" class="secondary" hidden>Older</button>`;
  let rows = [];
  const load = async (older) => {
    const form = Object.fromEntries(new FormData($("#audit-filter")));
    const params = new URLSearchParams({ limit: 100 });
    for (const key of ["action", "actor"]) if (form[key]) params.set(key, form[key]);
    if (older && rows.length) params.set("before", rows[rows.length - 1].id);
    const page = await api(`/api/audit?${params}`);
    rows = older ? rows.concat(page) : page;
    $("#audit").innerHTML = `<tr><th>when</th><th>who</th><th>action</th><th>on</th><th>details</th></tr>`
      + (rows.map((e) => `<tr data-entry="${e.id}"><td>${when(e.at)}</td><td>${esc(e.actor)}</td>
        <td class="action">${esc(e.action)}</td><td>${esc(e.target)}</td>
        <td class="details">${Object.entries(e.details).map(([k, v]) =>
          `<div><b>${esc(k)}</b> ${esc(typeof v === "string" ? v : JSON.stringify(v))}</div>`).join("")}</td></tr>`).join("")
      || '<tr><td colspan="5" class="muted">nothing logged</td></tr>');
    $("#audit-older").hidden = page.length < 100;
  };
  $("#audit-filter").onsubmit = (event) => { event.preventDefault(); load(false).catch((e) => banner(e.message)); };
  $("#audit-older").onclick = () => load(true).catch((e) => banner(e.message));
  await load(false);
}

function errorPage(title, message) {
  view().innerHTML = `<h1>${esc(title)}</h1><p>${esc(message)}</p><p><a href="#/problems">Back to the problems</a></p>`;
}

// -- router -----------------------------------------------------------------------------------
const routes = [
  [/^#\/signin$/, signInPage, false],
  [/^#\/problems$/, problemsPage, true],
  [/^#\/problems\/([\w-]+)$/, problemPage, true],
  [/^#\/submissions(\?.*)?$/, submissionsPage, true],
  [/^#\/submissions\/(\d+)$/, submissionPage, true],
  [/^#\/compare\/(\d+)\/(\d+)$/, comparePage, true],
  [/^#\/leaderboard(\?.*)?$/, leaderboardPage, false],
  [/^#\/account$/, accountPage, true],
  [/^#\/admin$/, adminPage, true],
  [/^#\/audit$/, auditPage, true],
  [/^#\/clarifications$/, clarificationsPage, true],
];
async function route() {
  state.page += 1;  // the last page's polls in flight draw nothing now
  clearInterval(state.timer);
  banner("");
  if (!location.hash || location.hash === "#/") location.hash = state.name ? "#/problems" : "#/signin";
  renderHeader();
  if (state.clockFor !== state.name) { state.clockFor = state.name; startClock(); }
  showUnread();
  clearInterval(state.unreadTimer);
  state.unreadTimer = setInterval(showUnread, 20000);
  for (const [pattern, page, needsToken] of routes) {
    const match = location.hash.match(pattern);
    if (!match) continue;
    if (needsToken && !state.name) { location.hash = "#/signin"; return; }
    try {
      await page(...match.slice(1).filter((m) => m !== undefined && !m.startsWith("?")));
    } catch (e) {
      errorPage(e.status === 404 ? "Not found" : "Something went wrong", e.message);
    }
    return;
  }
  errorPage("Not found", `There is no page at ${location.hash}.`);
}
window.addEventListener("hashchange", route);
whoAmI().then(route);
