// Refreshes the live part of a page: every data-every milliseconds it
// fetches data-refresh (the same page with ?partial=1, rendered on the
// server) and swaps it in. Paused while the user edits a field in it or
// the tab is hidden.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !window.fetch) return;
  var every = parseInt(live.getAttribute("data-every"), 10) || 5000;
  var url = live.getAttribute("data-refresh");
  function busy() {
    var a = document.activeElement;
    return a && live.contains(a) && (a.tagName === "INPUT" || a.tagName === "SELECT" || a.tagName === "TEXTAREA");
  }
  function tick() {
    if (document.hidden || busy()) return;
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html !== null && !busy()) {
          live.innerHTML = html;
          live.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () {});
  }
  setInterval(tick, every);
})();
