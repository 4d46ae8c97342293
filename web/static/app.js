// asb dashboard: live updates and small conveniences. Every form works
// without this script; it only keeps pages current and shows previews.
"use strict";

(function () {
  // fetchPage returns the current page's HTML, parsed, or null.
  function fetchPage(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" }, cache: "no-store" })
      .then(function (resp) {
        if (resp.redirected || !resp.ok) { return null; }
        return resp.text();
      })
      .then(function (html) { return html === null ? null : new DOMParser().parseFromString(html, "text/html"); })
      .catch(function () { return null; });
  }

  function replaceWith(doc, id, keepOpen) {
    var cur = document.getElementById(id);
    var next = doc.getElementById(id);
    if (!cur || !next) { return; }
    var open = {};
    if (keepOpen) {
      cur.querySelectorAll("details[open][id]").forEach(function (d) { open[d.id] = true; });
    }
    cur.replaceWith(document.importNode(next, true));
    if (keepOpen) {
      Object.keys(open).forEach(function (k) {
        var d = document.getElementById(k);
        if (d) { d.open = true; }
      });
    }
  }

  // Fleet: refresh the table every few seconds while the tab is visible.
  function fleetPage() {
    var busy = false;
    setInterval(function () {
      if (busy || document.hidden) { return; }
      busy = true;
      fetchPage(location.href).then(function (doc) {
        busy = false;
        if (doc) { replaceWith(doc, "fleet", false); }
      });
    }, 4000);
  }

  // The event types /watch.sse names; each is a refresh trigger.
  var eventTypes = ["session.created", "session.updated", "session.closed", "run.queued", "run.state",
    "run.question", "run.answered", "ask", "agent"];

  // Session: follow /watch.sse and re-render the changing parts of the
  // page from the server, so rendering lives in one place (the templates).
  function sessionPage() {
    var live = document.getElementById("live");
    if (!live) { return; }
    var id = live.getAttribute("data-session");
    var after = live.getAttribute("data-last-event") || "0";
    var pending = false, running = false;

    function refresh() {
      if (running) { pending = true; return; }
      running = true;
      fetchPage(location.pathname).then(function (doc) {
        running = false;
        if (doc) {
          replaceWith(doc, "summary", false);
          replaceWith(doc, "thread", true);
          replaceWith(doc, "ask-history", false);
          var curQ = document.getElementById("question-panel");
          var nextQ = doc.getElementById("question-panel");
          // The answer box is replaced only when the question changed,
          // so nothing typed into it is lost.
          if (curQ && nextQ && curQ.getAttribute("data-key") !== nextQ.getAttribute("data-key")) {
            replaceWith(doc, "question-panel", false);
          }
          document.querySelectorAll(".notice").forEach(function (n) { n.remove(); });
          var nextLive = doc.getElementById("live");
          if (nextLive) { live.setAttribute("data-last-event", nextLive.getAttribute("data-last-event")); }
        }
        if (pending) { pending = false; setTimeout(refresh, 150); }
      });
    }

    var timer = null;
    function schedule() {
      if (timer) { return; }
      timer = setTimeout(function () { timer = null; refresh(); }, 150);
    }
    var src = new EventSource("/watch.sse?session=" + encodeURIComponent(id) + "&after=" + encodeURIComponent(after));
    eventTypes.forEach(function (t) { src.addEventListener(t, schedule); });
    src.onmessage = schedule;
    window.addEventListener("pagehide", function () { src.close(); });
  }

  // The same rule as the server's detectRepo (web/repo_detect.go).
  var repoRe = /(?:^|[\s(\[{"'`,;:])(?:https?:\/\/)?(?:www\.)?(github\.com\/)?([A-Za-z0-9][A-Za-z0-9_-]{0,38})\/([A-Za-z0-9._-]{1,100})/g;
  var fileSuffixes = [".go", ".js", ".ts", ".tsx", ".jsx", ".py", ".rb", ".rs", ".java", ".c", ".h", ".cc", ".cpp",
    ".md", ".txt", ".json", ".yml", ".yaml", ".toml", ".lock", ".sh", ".html", ".css", ".sql", ".xml", ".mod", ".sum", ".cfg", ".ini"];
  var notRepos = ["and/or", "either/or", "input/output", "read/write", "yes/no", "on/off", "true/false",
    "client/server", "i/o", "n/a", "w/o"];

  function detectRepo(task) {
    task = task.slice(0, 65536);
    repoRe.lastIndex = 0;
    var m, n = 0;
    while ((m = repoRe.exec(task)) !== null && n++ < 20) {
      var host = !!m[1], owner = m[2], name = m[3].replace(/\.+$/, "");
      var rest = task.slice(m.index + m[0].length);
      if (/\.git$/.test(name)) { name = name.slice(0, -4); }
      if (!host) {
        var lower = name.toLowerCase();
        if (rest.charAt(0) === "/" || fileSuffixes.some(function (s) { return lower.endsWith(s); })) { continue; }
        if (notRepos.indexOf((owner + "/" + name).toLowerCase()) >= 0) { continue; }
      }
      if (owner.charAt(0) === "-" || name === "" || name === "." || name === ".." || name.charAt(0) === "-") { continue; }
      return owner + "/" + name;
    }
    return "";
  }

  function newRunPage() {
    var repo = document.getElementById("repo");
    var task = document.getElementById("task");
    var out = document.getElementById("attached");
    if (!repo || !task || !out) { return; }
    function update() {
      var r = repo.value.trim(), fromTask = false;
      if (!r) { r = detectRepo(task.value); fromTask = r !== ""; }
      out.textContent = "";
      if (!r) { return; }
      out.appendChild(document.createTextNode("Repository attached: "));
      var s = document.createElement("strong");
      s.textContent = r;
      out.appendChild(s);
      if (fromTask) { out.appendChild(document.createTextNode(" (named in the task)")); }
    }
    repo.addEventListener("input", update);
    task.addEventListener("input", update);
  }

  function accountPage() {
    var btn = document.getElementById("test-connection");
    var out = document.getElementById("test-result");
    var tok = document.getElementById("test-token");
    if (!btn || !out) { return; }
    btn.addEventListener("click", function () {
      out.className = "";
      out.textContent = "Testing…";
      var headers = { Accept: "application/json" };
      var credentials = "same-origin";
      if (tok && tok.value.trim()) {
        headers.Authorization = "Bearer " + tok.value.trim();
        credentials = "omit"; // test the token alone, not this browser's cookie
      }
      fetch("/fleet.json?limit=1", { headers: headers, credentials: credentials, cache: "no-store" })
        .then(function (resp) {
          return resp.json().catch(function () { return {}; }).then(function (body) {
            if (resp.ok) {
              out.className = "ok";
              out.textContent = "OK: " + location.origin + " answered and accepted the credentials.";
            } else {
              out.className = "fail";
              out.textContent = "Failed (" + resp.status + "): " + (body.error || resp.statusText);
            }
          });
        })
        .catch(function (err) {
          out.className = "fail";
          out.textContent = "Failed: " + err.message;
        });
    });
  }

  var pages = { fleet: fleetPage, session: sessionPage, "new": newRunPage, account: accountPage };
  var init = pages[document.body.getAttribute("data-page")];
  if (init) { init(); }
})();
