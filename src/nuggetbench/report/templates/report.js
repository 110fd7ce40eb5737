"use strict";
// nuggetbench report: view switching, the per-query table (sort, filter), the query view and the
// nuggets list. Every number comes from the JSON block #data, computed in Python.
const D = JSON.parse(document.getElementById("data").textContent);
const $ = (s, r = document) => r.querySelector(s);
const $$ = (s, r = document) => Array.from(r.querySelectorAll(s));
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
const fmt = (v) => (v === null || v === undefined ? "\u2013" : v.toFixed(4));
const sign = (v) => (v === null ? "\u2013" : (v > 0 ? "+" : "") + v.toFixed(4));
// a text in at most n characters, cut at a word boundary (mid-word only for a word filling half
// of it) and ended with an ellipsis when cut: as report.data.clip does in Python
function clip(s, n) {
  if (s.length <= n) return s;
  let cut = s.slice(0, Math.max(n - 1, 1));
  const at = cut.search(/\s\S*$/);
  if (at >= Math.floor(n / 2)) cut = cut.slice(0, at);
  return cut.replace(/[\s,;:-]+$/, "") + "\u2026";
}
const qindex = new Map(D.qids.map((q, i) => [q, i]));
const others = D.systems.filter((s) => s !== D.baseline);
const KEY = new Map(D.systems.map((s, i) => [s, D.keys[i]]));
const LABEL = new Map(D.systems.map((s, i) => [s, D.labels[i]]));
const sysname = (s) => `<span class="sysname" title="${esc(s)}"><span class="key">${esc(KEY.get(s))}</span> ${esc(LABEL.get(s))}</span>`;
// query ids in natural order (2 before 10, q9 before q10): the default order and the id sort
const collator = new Intl.Collator(undefined, {numeric: true, sensitivity: "base"});
const natural = D.qids.map((_, i) => i).sort((x, y) => collator.compare(D.qids[x], D.qids[y]) || x - y);
const rankOf = new Int32Array(D.qids.length);
natural.forEach((i, r) => { rankOf[i] = r; });
const state = {sort: null, dir: 1, limit: 1000};

function show(view, arg) {
  $$("section.view").forEach((s) => s.classList.toggle("on", s.id === view));
  $$("nav a").forEach((a) => a.classList.toggle("on", a.dataset.view === view));
  window.scrollTo(0, 0);
  if (view === "perquery") renderTable();
  if (view === "query") renderQuery(arg || $("#qv-input").value || D.qids[D.start]);
  if (view === "nuggets") renderNuggets();
}
function route() {
  const h = decodeURIComponent(location.hash.slice(1));
  if (h.startsWith("q=")) show("query", h.slice(2));
  else show(document.getElementById(h) ? h : "summary");
}
window.addEventListener("hashchange", route);

// ---- per-query table -------------------------------------------------------------------
function delta(s, m, i) {
  const a = D.pq[s][m][i], b = D.pq[D.baseline][m][i];
  return a === null || b === null ? null : a - b;
}
function rows() {
  const m = $("#pq-measure").value, sys = $("#pq-system") ? $("#pq-system").value : null;
  const text = $("#pq-filter").value.trim().toLowerCase(), oc = $("#pq-outcome") ? $("#pq-outcome").value : "";
  let idx = natural.slice();
  if (text) idx = idx.filter((i) => D.qids[i].toLowerCase().includes(text) || D.qtext[i].toLowerCase().includes(text));
  if (oc !== "" && sys) idx = idx.filter((i) => D.outcome[sys][m][i] === Number(oc));
  if (state.sort) {
    const [kind, s] = state.sort.split(/:(.*)/s);
    const keys = {
      qid: (i) => rankOf[i],
      v: (i) => D.pq[s][m][i],
      d: (i) => delta(s, m, i),
      rbo: (i) => (D.rankRBO[sys] || [])[i] ?? null,
      tau: (i) => (D.ranktau[sys] || [])[i] ?? null,
    };
    const key = keys[kind];
    idx.sort((x, y) => {
      const a = key(x), b = key(y);
      if (a === b) return x - y;
      if (a === null) return 1;
      if (b === null) return -1;
      return (a < b ? -1 : 1) * state.dir;
    });
  }
  return idx;
}
function renderTable() {
  const m = $("#pq-measure").value, idx = rows();
  const shown = idx.slice(0, state.limit);
  const sys = $("#pq-system") ? $("#pq-system").value : "";
  $$("#pq-table th.rank").forEach((th) => { th.textContent = `${th.dataset.sort === "rbo" ? "RBO" : "\u03c4"} ${KEY.get(sys)}`; });
  $("#pq-table tbody").innerHTML = shown.map((i) => {
    const q = D.qids[i];
    const rk = sys ? `<td class="num rbo">${fmt((D.rankRBO[sys] || [])[i])}</td><td class="num tau">${fmt((D.ranktau[sys] || [])[i])}</td>` : "";
    const vals = D.systems.map((s) => `<td class="num v" data-system="${esc(s)}">${fmt(D.pq[s][m][i])}</td>`).join("");
    const ds = others.map((s) => {
      const o = D.outcome[s][m][i], c = o === 1 ? "win" : o === -1 ? "loss" : "tie";
      return `<td class="num d ${c}" data-system="${esc(s)}">${sign(delta(s, m, i))}</td>`;
    }).join("");
    return `<tr data-qid="${esc(q)}"><td><a class="qlink" href="#q=${encodeURIComponent(q)}">${esc(q)}</a></td><td class="text">${esc(clip(D.qtext[i], 200))}</td>${vals}${ds}${rk}</tr>`;
  }).join("");
  $("#pq-count").textContent = `${idx.length} of ${D.qids.length} queries`;
  $("#pq-more").innerHTML = idx.length > shown.length ? `showing the first ${shown.length}; <a href="#perquery" id="pq-all">show all ${idx.length}</a>` : "";
  $$("#perquery .fig").forEach((f) => f.classList.toggle("on", f.dataset.measure === m && f.dataset.system === sys));
}
$$("#pq-table th[data-sort]").forEach((th) => th.addEventListener("click", () => {
  state.dir = state.sort === th.dataset.sort ? -state.dir : 1;
  state.sort = th.dataset.sort;
  $$("#pq-table th").forEach((t) => t.classList.remove("asc", "desc"));
  th.classList.add(state.dir > 0 ? "asc" : "desc");
  renderTable();
}));
["#pq-measure", "#pq-system", "#pq-outcome", "#pq-filter"].forEach((s) => $(s) && $(s).addEventListener("input", renderTable));
$("#pq-more").addEventListener("click", (e) => { if (e.target.id === "pq-all") { e.preventDefault(); state.limit = Infinity; renderTable(); } });

// ---- query view ------------------------------------------------------------------------
function marked(text, marks) {
  let out = "", at = 0;
  for (const [s, e] of marks) {
    if (s < at) continue;
    out += esc(text.slice(at, s)) + "<mark>" + esc(text.slice(s, e)) + "</mark>";
    at = e;
  }
  return out + esc(text.slice(at));
}
function nuggetMatrix(qi, shown) {
  const N = D.nuggets && D.nuggets[String(qi)];
  if (!N) return "";
  const strip = (s) => shown.includes(s);
  const head = D.systems.map((s) => `<th colspan="${strip(s) ? D.k + 1 : 1}" title="${esc(s)}">${esc(KEY.get(s))}: first rank${strip(s) ? `, ranks 1..${D.k}` : ""}</th>`).join("");
  const body = N.ids.map((id, j) => {
    const found = D.systems.some((s) => N.first[s][j] !== null);
    const cells = D.systems.map((s) => {
      const docs = D.top[s].docs[qi];
      const firstCell = `<td class="num first" data-system="${esc(s)}">${N.first[s][j] ?? "\u2013"}</td>`;
      if (!strip(s)) return firstCell;
      const cells1 = docs.map((d, r) => {
        const sup = N.docs[String(d)] && N.docs[String(d)][0].includes(j);
        const first = N.first[s][j] === r + 1;
        return `<td class="cell${sup ? (first ? " f" : " s") : ""}" title="rank ${r + 1}"></td>`;
      }).join("") + "<td class=\"cell\"></td>".repeat(D.k - docs.length);
      return firstCell + cells1;
    }).join("");
    return `<tr class="${found ? "" : "none-found"}" data-nugget="${esc(id)}"><td title="${esc(N.spans[j].join(" | "))}">${esc(id)}: ${esc(N.text[j])}</td>${cells}</tr>`;
  }).join("");
  return `<h3>Nuggets</h3><div class="scroll"><table class="nm"><thead><tr><th>nugget</th>${head}</tr></thead><tbody>${body}</tbody></table></div>`;
}
function scoreTable(qi) {
  const head = D.systems.map((s) => `<th class="num" title="${esc(s)}">${esc(KEY.get(s))}</th>`).join("");
  const body = D.measures.map((m) => {
    const vals = D.systems.map((s) => D.pq[s][m][qi]);
    const known = vals.filter((v) => v !== null);
    const best = known.every((v) => v === known[0]) ? NaN : Math.max(...known);
    const cells = D.systems.map((s, i) => `<td class="num${vals[i] !== null && vals[i] === best ? " best" : ""}" data-system="${esc(s)}" data-measure="${esc(m)}">${fmt(vals[i])}</td>`).join("");
    return `<tr><th>${esc(m)}</th>${cells}</tr>`;
  }).join("");
  return `<h3>Scores on this query</h3><table id="qv-scores"><thead><tr><th>measure</th>${head}</tr></thead><tbody>${body}</tbody></table>${D.systems.length > 1 ? `<p class="note">bold: the best system (systems named by key, see the legend above).</p>` : ""}`;
}
function judgedPanel(qi) {
  const Q = D.qdocs[qi];
  const title = D.spanJudged ? "Supporting passages" : "Judged documents";
  if (!Q.j.length) return `<h3>${title}</h3><p class="note">none for this query.</p>`;
  const head = D.systems.map((s) => `<th class="num" title="${esc(s)}: rank in its run">${esc(KEY.get(s))}</th>`).join("");
  const body = Q.j.map(([d, g]) => {
    const [id, snip] = D.docs[d], ranks = Q.r[String(d)];
    const cells = ranks.map((r, i) => `<td class="num rank${r !== null && r <= D.k ? " top" : ""}" data-system="${esc(D.systems[i])}">${r ?? "\u2013"}</td>`).join("");
    return `<tr data-docid="${esc(id)}"><td><code>${esc(id)}</code></td><td class="num">${g}</td>${cells}<td class="snip1">${esc(clip(snip, 140))}</td></tr>`;
  }).join("");
  const more = Q.more ? `<p class="note">and ${Q.more} more judged documents (lower grades).</p>` : "";
  return `<h3>${title} and the rank each system gave them</h3><p class="note">rank in each system's run (bold: within the top ${D.k}; \u2013: not retrieved).</p><table id="qv-judged"><thead><tr><th>document</th><th class="num">grade</th>${head}<th>text</th></tr></thead><tbody>${body}</tbody></table>${more}`;
}
function shownSystems() {
  if (D.systems.length === 1 || $("#qv-all").checked) return D.systems;
  const a = $("#qv-a").value, b = $("#qv-b").value;
  return a === b ? [a] : [a, b];
}
function moveBadge(d, r, o, ranks) {
  const ro = ranks[D.systems.indexOf(o)];
  const k = esc(KEY.get(o));
  if (ro === null) return `<span class="badge mv new" data-system="${esc(o)}" title="not in ${esc(o)}'s run">${k} new</span>`;
  const diff = r - ro, arrow = diff > 0 ? `\u2191${diff}` : diff < 0 ? `\u2193${-diff}` : "=";
  const cls = (diff > 0 ? "up" : diff < 0 ? "down" : "same") + (ro <= D.k ? " sh" : "");
  return `<span class="badge mv ${cls}" data-doc="${d}" data-system="${esc(o)}" data-rank="${ro}" data-move="${diff}" title="${esc(o)} ranks it #${ro}${ro <= D.k ? ": click to scroll to it" : ""}">${k} #${ro} ${arrow}</span>`;
}
function renderQuery(q) {
  const qi = qindex.get(q);
  $("#qv-input").value = q;
  if (qi === undefined) { $("#qv").innerHTML = `<p>No query ${esc(q)} in this report.</p>`; $("#qv-id").textContent = ""; return; }
  $("#qv-id").textContent = q;
  const N = D.nuggets && D.nuggets[String(qi)];
  const ranksOf = D.qdocs[qi].r;
  const shown = shownSystems();
  const cols = shown.map((s) => {
    const T = D.top[s];
    const docs = T.docs[qi].map((d, r) => {
      const g = T.grades[qi][r], [id, snip] = D.docs[d];
      const moves = shown.filter((o) => o !== s).map((o) => moveBadge(d, r + 1, o, ranksOf[String(d)])).join("");
      const nd = N && N.docs[String(d)];
      const ng = nd ? nd[0].map((j) => `<span class="badge ng">${esc(N.ids[j])}</span>`).join("") : "";
      const cls = g === null ? "unjudged" : g > 0 ? "rel" : "nonrel";
      const grade = g === null ? `<span class="badge uj">unjudged</span>` : `<span class="grade">grade ${g}</span>`;
      return `<div class="doc ${cls}" data-doc="${d}" data-docid="${esc(id)}" data-rank="${r + 1}"><div class="meta"><b>#${r + 1}</b> <code>${esc(id)}</code> <span>score ${T.scores[qi][r]}</span> ${grade}${moves}${ng}</div><div class="snip">${nd ? marked(snip, nd[1]) : esc(snip)}</div></div>`;
    }).join("");
    return `<div class="col" data-system="${esc(s)}"><h3>${sysname(s)}</h3>${docs || "<p>no documents</p>"}</div>`;
  }).join("");
  const qtext = D.hasTexts ? `<div class="qtext">${esc(D.qtext[qi])}</div>` : D.missing ? `<p class="note" id="no-texts">Numbers only: ${esc(D.missing)}</p>` : `<p class="note" id="no-texts">Scored on a judgments file: no query or document texts.</p>`;
  // numbers only (no runs, or no judgments here): the panels that need them are left out
  const judged = D.hasJudged === false ? "" : judgedPanel(qi);
  const tops = D.hasRuns === false ? "" : `${nuggetMatrix(qi, shown)}<h3>Top ${D.k}</h3><div class="cols" style="--n:${shown.length}">${cols}</div>`;
  $("#qv").innerHTML = `${qtext}${scoreTable(qi)}${judged}${tops}`;
}
$("#qv-ids").innerHTML = D.qids.slice(0, 5000).map((q) => `<option value="${esc(q)}">`).join("");
$("#qv-input").addEventListener("change", (e) => { location.hash = "q=" + encodeURIComponent(e.target.value); });
if (others.length) {
  $("#qv-a").value = D.baseline;
  $("#qv-b").value = others[0];
  ["#qv-a", "#qv-b", "#qv-all"].forEach((s) => $(s).addEventListener("change", () => renderQuery($("#qv-input").value)));
}
$("#qv").addEventListener("click", (e) => {
  const b = e.target.closest(".badge.sh");
  const col = b && $$("#qv .col").find((c) => c.dataset.system === b.dataset.system);
  const doc = col && col.querySelector(`.doc[data-doc="${b.dataset.doc}"]`);
  if (doc) doc.scrollIntoView({block: "center"});
});
$("#qv").addEventListener("mouseover", (e) => {
  const b = e.target.closest(".badge.sh");
  $$("#qv .doc.hl").forEach((x) => x.classList.remove("hl"));
  if (b) $$(`#qv .doc[data-doc="${b.dataset.doc}"]`).forEach((x) => x.classList.add("hl"));
});

// ---- nuggets list ----------------------------------------------------------------------
function renderNuggets() {
  const tb = $("#nug-table tbody");
  if (tb.childElementCount) return;
  tb.innerHTML = Object.keys(D.nuggets).sort((a, b) => rankOf[Number(a)] - rankOf[Number(b)]).map((k) => {
    const N = D.nuggets[k], qi = Number(k), q = D.qids[qi];
    const per = D.systems.map((s) => {
      const f = N.first[s];
      return `<td class="num" data-system="${esc(s)}">${f.filter((r) => r !== null && r <= D.k).length} / ${f.filter((r) => r !== null).length}</td>`;
    }).join("");
    const none = N.ids.filter((_, j) => D.systems.every((s) => N.first[s][j] === null)).length;
    return `<tr data-qid="${esc(q)}"><td><a class="qlink" href="#q=${encodeURIComponent(q)}">${esc(q)}</a> ${esc(clip(D.qtext[qi], 80))}</td><td class="num">${N.ids.length}</td>${per}<td class="num none">${none}</td></tr>`;
  }).join("");
}
route();
