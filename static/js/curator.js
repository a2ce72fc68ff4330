/* Blindspot: small helpers of the curator pages (a file, not inline: the Content-Security-Policy
 * allows scripts from the app's static files only).
 *
 * - [data-copy="#selector"] buttons copy that input's value to the clipboard.
 * - The new-queue form fills the config box with the chosen kind's default config while the box
 *   is empty or still holds another kind's default (the defaults: json_script "default-configs").
 */
(function () {
  "use strict";

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest("[data-copy]");
    if (!btn) return;
    var input = document.querySelector(btn.dataset.copy);
    if (!input) return;
    input.select();
    var done = function () {
      var label = btn.textContent;
      btn.textContent = "✓";
      setTimeout(function () { btn.textContent = label; }, 1200);
    };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(input.value).then(done);
    else { document.execCommand("copy"); done(); }
  });

  function queueFormDefaults() {
    var source = document.getElementById("default-configs");
    var kind = document.getElementById("id_kind");
    var config = document.getElementById("id_config");
    if (!source || !kind || !config) return;
    var defaults = JSON.parse(source.textContent);
    var pretty = function (k) { return JSON.stringify(defaults[k] || {}, null, 2); };
    kind.addEventListener("change", function () {
      var current = config.value.trim();
      var untouched = current === "" || Object.keys(defaults).some(function (k) { return current === pretty(k); });
      if (untouched) config.value = pretty(kind.value);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", queueFormDefaults);
  else queueFormDefaults();
})();

/* The task browser's keys: "/" focuses the search, j / k move through the rows, Enter opens the
 * row's task, n / p turn the page, Escape leaves the search. Typing in a field is never taken
 * for a key. */
(function () {
  "use strict";
  var current = -1;
  function rows() { return Array.prototype.slice.call(document.querySelectorAll("[data-rows] [data-row]")); }
  function mark(i) {
    var all = rows();
    if (!all.length) return;
    current = Math.max(0, Math.min(i, all.length - 1));
    all.forEach(function (r, k) { r.classList.toggle("row-current", k === current); });
    all[current].focus();
  }
  document.addEventListener("htmx:afterSwap", function () { current = -1; });
  // The search asks by its keyup (hx-trigger "keyup changed"); its change event on leaving the
  // field would send the same request again and swap the rows under the keyboard's selection.
  document.addEventListener("change", function (ev) {
    if (ev.target && ev.target.id === "id_q") ev.stopPropagation();
  }, true);
  document.addEventListener("keydown", function (ev) {
    if (!document.querySelector("[data-rows]") && !document.getElementById("id_q")) return;
    var t = ev.target;
    // preventDefault: Chrome's own Escape in a type=search field would clear the text and re-filter
    if (ev.key === "Escape" && t && t.id === "id_q") { ev.preventDefault(); t.blur(); return; }
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "/") { var q = document.getElementById("id_q"); if (q) { ev.preventDefault(); q.focus(); q.select(); } return; }
    if (ev.key === "j") { ev.preventDefault(); mark(current + 1); return; }
    if (ev.key === "k") { ev.preventDefault(); mark(current - 1); return; }
    if (ev.key === "Enter" && current >= 0) {
      var link = rows()[current] && rows()[current].querySelector("[data-open]");
      if (link) { ev.preventDefault(); link.click(); }
      return;
    }
    if (ev.key === "n" || ev.key === "p") {
      var pager = document.querySelector('.pager [data-key="' + ev.key + '"]');
      if (pager) { ev.preventDefault(); pager.click(); }
    }
  });
})();

