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
