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

// Keeps a governance form's fields and its rule's YAML in step: a change
// of a field posts the form (action sync-form) and puts the YAML the
// server writes in the text box; a change of the YAML posts it (action
// sync-yaml) and puts the fields the server reads from it in place. Save
// then writes what was edited last (the source field). Without this
// script the page's own buttons do the same in a full round trip.
(function () {
  "use strict";
  var form = document.querySelector("form[data-sync]");
  if (!form || !window.fetch || !window.URLSearchParams) return;
  var fields = document.getElementById("fields");
  var yaml = document.getElementById("yaml");
  var source = document.getElementById("source");
  var errorBox = document.getElementById("sync-error");
  var nojs = form.querySelector(".nojs");
  if (nojs) nojs.hidden = true;
  var timer = null, seq = 0;
  function values() {
    var kept = {};
    fields.querySelectorAll("input, select").forEach(function (el) {
      if (el.type === "checkbox") kept[el.name + "=" + el.value] = el.checked;
      else kept[el.name] = el.value;
    });
    return kept;
  }
  // put swaps the fields in, keeping the focus and, when they come from
  // the fields themselves, what was typed meanwhile.
  function put(html, keep) {
    var kept = keep ? values() : {}, focus = document.activeElement;
    var focusName = focus && fields.contains(focus) ? focus.name : null;
    fields.innerHTML = html;
    fields.querySelectorAll("input, select").forEach(function (el) {
      if (el.type === "checkbox") {
        var k = el.name + "=" + el.value;
        if (k in kept) el.checked = kept[k];
      } else if (el.name in kept) {
        el.value = kept[el.name];
      }
      if (focusName && el.name === focusName) el.focus();
    });
  }
  function sync(from) {
    var body = new URLSearchParams(new FormData(form));
    body.set("action", "sync-" + from);
    var mine = ++seq;
    // getAttribute: form.action is the form's buttons named "action".
    fetch(form.getAttribute("action"), { method: "POST", body: body, credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (d) {
        if (mine !== seq) return; // a newer change is on its way
        if (from === "form") yaml.value = d.yaml;
        var shape = fields.querySelectorAll("input, select").length;
        var probe = document.createElement("div");
        probe.innerHTML = d.fields;
        // The fields change shape when a spare row was filled, or the YAML
        // changed: then they are swapped in.
        if (from === "yaml") put(d.fields, false);
        else if (probe.querySelectorAll("input, select").length !== shape) put(d.fields, true);
        errorBox.textContent = d.error || "";
        errorBox.hidden = !d.error;
        form.setAttribute("data-synced", String(mine));
      })
      .catch(function () {});
  }
  function later(from) {
    source.value = from;
    clearTimeout(timer);
    timer = setTimeout(function () { sync(from); }, 300);
  }
  fields.addEventListener("input", function () { later("form"); });
  fields.addEventListener("change", function () { later("form"); });
  yaml.addEventListener("input", function () { later("yaml"); });
})();

// The test page: picking another method shows its page (its arguments to
// start from, its providers).
(function () {
  "use strict";
  var pick = document.getElementById("method-choice");
  if (!pick) return;
  var choose = pick.form.querySelector(".nojs");
  if (choose) choose.hidden = true;
  pick.addEventListener("change", function () { pick.form.submit(); });
})();
