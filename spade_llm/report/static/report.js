(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("report-data").textContent);
  var table = document.getElementById("tasks");
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr.task"));
  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) if (arguments[i]) parent.appendChild(arguments[i]);
    return parent;
  }
  function pre(text, cls) { return el("pre", cls || "", text); }
  function sub(summary, body, open) {
    var d = el("details", "sub");
    if (open) d.open = true;
    return add(d, el("summary", "", summary), body);
  }
  function diffView(text) {
    var p = el("pre", "diff");
    text.split("\n").forEach(function (line) {
      var c = line.charAt(0) === "+" ? "add" : line.charAt(0) === "-" ? "del" : line.slice(0, 2) === "@@" ? "hunk" : "";
      p.appendChild(el("span", c, line));
    });
    return p;
  }
  function testsView(a) {
    if (!a.tests.length) return null;
    var t = el("table", "tests");
    add(t, add(el("tr"), el("th", "", "#"), el("th", "", "input"), el("th", "", "verdict"),
      el("th", "", "output / error")));
    a.tests.forEach(function (x, i) {
      var v = el("td"); v.appendChild(el("span", "chipv st-" + x.st, x.st));
      add(t, add(el("tr"), el("td", "num", i + 1), el("td", "", x["in"]), v,
        el("td", "", x.err ? x.err : x.out === null ? "" : x.out)));
    });
    return t;
  }
  function verdict(a) {
    var s = "public " + a.pp + "/" + a.pt;
    if (a.ht) s += a.hp === null ? " · hidden not run" : " · hidden " + a.hp + "/" + a.ht;
    return s;
  }
  function attemptView(a, i) {
    var ok = a.pt && a.pp === a.pt && (a.hp === null ? !a.ht : a.hp === a.ht);
    var box = el("div", "turn");
    var head = add(el("div", "turn-head"), el("span", "", "Turn " + (a.turn || i + 1)),
      el("span", "chipv " + (ok ? "st-passed" : "st-failed"), verdict(a)));
    if (a.status && a.status !== "ok") head.appendChild(el("span", "chipv st-timeout", a.status));
    box.appendChild(head);
    var told = i === 0 ? "What the solver was told (the task prompt)" : "What the solver was told (feedback)";
    if (a.told) box.appendChild(sub(told, pre(a.told, "told"), i > 0));
    if (a.diff !== null) box.appendChild(a.diff ? sub("Diff from the previous turn", diffView(a.diff), true)
      : el("p", "muted", "Same code as the previous turn."));
    box.appendChild(sub("Code", pre(a.code), a.diff === null));
    box.appendChild(testsView(a) || el("p", "muted", "No test result."));
    if (a.load_error) box.appendChild(add(el("p"), el("b", "", "Load error: "), document.createTextNode(a.load_error)));
    if (a.stderr) box.appendChild(sub("stderr", pre(a.stderr), false));
    return box;
  }
  function trajectoryView(t) {
    var box = el("div", "trajectory");
    var meta = add(el("p"), el("span", "chipv st-" + t.status, t.status),
      document.createTextNode(" reward " + (t.reward === null ? "—" : t.reward) + " · " + t.attempts.length +
        " turn(s) · " + t.id));
    if (t.flags.length) meta.appendChild(el("span", "reason", " " + t.flags.join(", ")));
    box.appendChild(meta);
    if (t.error) box.appendChild(add(el("p"), el("b", "", "Error: "), document.createTextNode(t.error)));
    if (t.system) box.appendChild(sub("System prompt", pre(t.system, "told"), false));
    if (t.prompt) box.appendChild(sub("Prompt", pre(t.prompt, "told"), true));
    t.attempts.forEach(function (a, i) { box.appendChild(attemptView(a, i)); });
    return box;
  }
  function taskView(id) {
    var info = DATA.tasks[id];
    var box = el("div", "detail");
    if (!info) {
      box.appendChild(el("p", "muted",
        "No trajectory of this task is embedded in this page (see how they are sampled above)."));
      return box;
    }
    box.appendChild(el("p", "task-desc", info.desc));
    var tests = el("table", "tests");
    add(tests, add(el("tr"), el("th", "", "input"), el("th", "", "expected")));
    info.tests.forEach(function (x) { add(tests, add(el("tr"), el("td", "", x["in"]), el("td", "", x.exp))); });
    box.appendChild(sub("Reference solution and tests (" + info.ntests + ")",
      add(el("div"), pre(info.ref), tests), false));
    var tabs = el("div", "tabs");
    var panel = el("div");
    info.traj.forEach(function (t, i) {
      var b = el("button", i === 0 ? "on" : "", "sample " + t.sample + " · " + (DATA.labels[t.cat] || t.cat));
      b.type = "button";
      b.addEventListener("click", function () {
        Array.prototype.forEach.call(tabs.children, function (c) { c.className = ""; });
        b.className = "on";
        panel.replaceChildren(trajectoryView(t));
      });
      tabs.appendChild(b);
    });
    add(box, tabs, panel);
    if (info.traj.length) panel.appendChild(trajectoryView(info.traj[0]));
    return box;
  }
  function isOpen(tr) { return tr.classList.contains("open"); }
  function close(tr) {
    var next = tr.nextElementSibling;
    if (next && next.classList.contains("detail-row")) next.remove();
    tr.classList.remove("open");
  }
  function open(tr, scroll) {
    if (isOpen(tr)) return;
    var row = el("tr", "detail-row");
    var cell = el("td");
    cell.colSpan = tr.children.length;
    cell.appendChild(taskView(tr.dataset.id));
    row.appendChild(cell);
    tr.after(row);
    tr.classList.add("open");
    if (scroll) tr.scrollIntoView({block: "start"});
  }
  function setHash(id) {
    var url = location.pathname + location.search + (id ? "#task=" + encodeURIComponent(id) : "");
    history.replaceState(null, "", url);
  }
  rows.forEach(function (tr) {
    function toggle() {
      if (isOpen(tr)) { close(tr); setHash(null); } else { open(tr, false); setHash(tr.dataset.id); }
    }
    tr.addEventListener("click", toggle);
    tr.addEventListener("keydown", function (e) { if (e.key === "Enter") toggle(); });
  });
  var fs = document.getElementById("f-status"), fk = document.getElementById("f-kind"),
      fe = document.getElementById("f-epoch"), ft = document.getElementById("f-text"),
      fc = document.getElementById("f-count");
  var more = document.getElementById("f-more");
  var PAGE = +more.dataset.page, limit = PAGE;
  function filter(reset) {
    if (reset) limit = PAGE;
    var s = fs.value, k = fk.value, e = fe.value, q = ft.value.trim().toLowerCase(), n = 0, shown = 0;
    rows.forEach(function (tr) {
      var match = (!s || tr.dataset.status === s) && (!k || tr.dataset.kind === k) &&
        (!e || tr.dataset.epoch === e) && (!q || tr.textContent.toLowerCase().indexOf(q) >= 0);
      var show = match && (shown < limit || isOpen(tr));
      if (!show) close(tr);
      tr.hidden = !show;
      n += match ? 1 : 0;
      shown += show ? 1 : 0;
    });
    fc.textContent = shown + " shown of " + n + (n === rows.length ? " tasks" : " matching, " + rows.length + " tasks");
    more.hidden = shown >= n;
    more.textContent = "show " + Math.min(PAGE, n - shown) + " more";
  }
  [fs, fk, fe].forEach(function (x) { x.addEventListener("change", function () { filter(true); }); });
  ft.addEventListener("input", function () { filter(true); });
  more.addEventListener("click", function () { limit += PAGE; filter(false); });
  Array.prototype.forEach.call(table.querySelectorAll("th[data-sort]"), function (th, col) {
    var dir = 1;
    th.addEventListener("click", function () {
      var kind = th.dataset.sort;
      function key(tr) {
        var t = tr.children[col].textContent;
        if (kind === "num") { var v = parseFloat(t); return isNaN(v) ? -Infinity : v; }
        if (kind === "pass") { var p = t.split("/"); return +p[1] ? p[0] / p[1] : -1; }
        return t;
      }
      rows.forEach(close);
      rows.sort(function (a, b) { var x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * dir; });
      dir = -dir;
      var body = table.tBodies[0];
      rows.forEach(function (tr) { body.appendChild(tr); });
      filter(false);
    });
  });
  function fromHash() {
    var m = /^#task=(.*)$/.exec(location.hash);
    if (!m) return;
    var id;
    try { id = decodeURIComponent(m[1]); } catch (err) { return; }
    rows.forEach(function (tr) { if (tr.dataset.id === id) { tr.hidden = false; open(tr, true); } });
  }
  fromHash();
  var refresh = +document.body.dataset.refresh;
  if (refresh > 0) {
    setInterval(function () {
      var busy = rows.some(isOpen) || fs.value || fk.value || fe.value || ft.value;
      if (!busy && !document.hidden) location.reload();
    }, refresh * 1000);
  }
})();
