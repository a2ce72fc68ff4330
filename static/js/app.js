/* Blindspot: generic keyboard handling, lease heartbeat and task timer.
 *
 * Task partials mark their inputs with data-key="<key>"; this file maps key presses to them, so a
 * new task kind needs no JavaScript. Enter submits the task form, "s" skips, "?" shows the help.
 */
(function () {
  "use strict";

  // Show 400 (invalid answer) and 409 (lease lost) fragments inline instead of dropping them.
  function configureHtmx() {
    if (!window.htmx) return;
    // No inline styles under the CSP: settling must not copy a style attribute across a swap.
    htmx.config.attributesToSettle = ["class", "width", "height"];
    htmx.config.responseHandling = [
      { code: "204", swap: false },
      { code: "[23]..", swap: true },
      { code: "40[09]", swap: true, error: false },
      { code: "[45]..", swap: false, error: true },
    ];
  }
  configureHtmx();

  // In DEBUG, django-htmx replaces the whole page with any 400/404 response (to show Django's
  // error pages). Our own inline messages (answers carrying HX-Retarget) must not be caught by
  // that, so stop the event at <body>, before it reaches django-htmx's listener on document.
  function guardInlineErrors() {
    document.body.addEventListener("htmx:beforeOnLoad", function (evt) {
      var xhr = evt.detail.xhr;
      if (xhr && xhr.getResponseHeader("HX-Retarget")) evt.stopPropagation();
    });
  }
  if (document.body) guardInlineErrors();
  else document.addEventListener("DOMContentLoaded", guardInlineErrors);

  var state = { started: Date.now(), timer: null, heartbeat: null, zoomIndex: -1, preloaded: [] };

  function $(sel, root) {
    return (root || document).querySelector(sel);
  }
  function $all(sel, root) {
    return Array.prototype.slice.call((root || document).querySelectorAll(sel));
  }
  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (e) {
      return "";
    }
  }
  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable) return true;
    if (tag !== "INPUT") return false;
    return ["text", "search", "email", "number", "password", "url", "tel", "file"].indexOf(el.type) >= 0;
  }

  // ---- timer and heartbeat ------------------------------------------------------------------
  function formatElapsed(ms) {
    var s = Math.floor(ms / 1000);
    var m = Math.floor(s / 60);
    s = s % 60;
    return m + ":" + (s < 10 ? "0" : "") + s;
  }

  function startTask() {
    var area = $("#task-area");
    clearInterval(state.timer);
    clearInterval(state.heartbeat);
    state.started = Date.now();
    state.zoomIndex = -1;
    if (!area || !area.dataset.taskId) return;
    var timerEl = $("[data-timer]", area);
    state.timer = setInterval(function () {
      if (timerEl) timerEl.textContent = formatElapsed(Date.now() - state.started);
    }, 1000);
    var seconds = parseInt(area.dataset.heartbeatSeconds || "60", 10);
    var url = area.dataset.heartbeatUrl;
    state.heartbeat = setInterval(function () {
      sendHeartbeat(url, area);
    }, Math.max(seconds, 5) * 1000);
    initTagPicker(area);
    initCounters(area);
    preloadNext(area);
  }

  // The images of the tasks most likely handed out next (data-prefetch, a look-ahead that holds
  // no lease) load and decode at low priority while this one is answered, so the next task
  // paints from memory when the submit's answer brings it.
  function preloadNext(area) {
    var urls = (area.dataset.prefetch || "").split(" ").filter(Boolean);
    state.preloaded = urls.map(function (url) {
      var img = new Image();
      img.fetchPriority = "low";
      img.decoding = "async";
      img.src = url;
      if (img.decode) img.decode().catch(function () { /* gone or not an image: no matter */ });
      return img;
    });
  }

  function sendHeartbeat(url, area) {
    if (!document.body.contains(area)) return;
    fetch(url, {
      method: "POST",
      headers: { "X-CSRFToken": csrfToken(), "HX-Request": "true" },
      credentials: "same-origin",
    }).then(function (resp) {
      if (resp.status === 204) return;
      clearInterval(state.heartbeat);
      return resp.text().then(function (html) {
        var slot = $("#task-alert", area);
        if (slot && resp.status < 500) {
          slot.innerHTML = html;
          if (window.htmx) htmx.process(slot);
        }
      });
    }).catch(function () { /* offline for a moment: the next beat tries again */ });
  }

  // The timer measures the time spent on this task; the server stores it with the answer.
  document.addEventListener("htmx:configRequest", function (evt) {
    var form = evt.detail.elt;
    if (form && form.id === "task-form") {
      evt.detail.parameters.duration_ms = String(Date.now() - state.started);
      if (evt.detail.parameters instanceof FormData) {
        evt.detail.parameters.set("duration_ms", String(Date.now() - state.started));
      }
    }
  });
  document.addEventListener("submit", function (evt) {
    var field = evt.target && $("[data-duration]", evt.target);
    if (field) field.value = String(Date.now() - state.started);
  }, true);

  // Each new #task-area (a swapped-in next task, or a polled empty state) starts its own clock.
  function maybeStart() {
    var area = $("#task-area");
    if (area && area.dataset.started !== "1") {
      area.dataset.started = "1";
      startTask();
    }
  }
  document.addEventListener("htmx:afterSwap", function (evt) {
    maybeStart();
    var area = $("#task-area");
    var active = document.activeElement;
    if (evt.detail.target && evt.detail.target.id !== "task-alert" && active && area &&
        !area.contains(active) && !active.closest(".topbar")) {
      active.blur();
    }
  });
  document.addEventListener("htmx:afterSettle", maybeStart);
  document.addEventListener("bs:task-shown", maybeStart); // painted ahead (lookahead.js)
  document.addEventListener("bs:preload", function (evt) { preloadNext(evt.detail); });

  // ---- skill tags: selection bounds and filter -----------------------------------------------
  function initTagPicker(root) {
    var picker = $("[data-tag-picker]", root);
    if (!picker) return;
    var max = parseInt(picker.dataset.max || "8", 10);
    var boxes = $all("input[name=tags]", picker);
    var count = $("[data-tag-count]", picker);
    var hint = $("[data-tag-hint]", picker);
    function update() {
      var n = boxes.filter(function (b) { return b.checked; }).length;
      if (count) count.textContent = String(n);
      boxes.forEach(function (b) {
        b.disabled = !b.checked && n >= max;
        b.closest(".tag").classList.toggle("is-disabled", b.disabled);
      });
      if (hint) hint.hidden = n < max;
      var submit = $("#task-submit");
      var min = parseInt(picker.dataset.min || "1", 10);
      if (submit) submit.setAttribute("aria-disabled", n < min ? "true" : "false");
    }
    boxes.forEach(function (b) { b.addEventListener("change", update); });
    update();
    var filter = $("[data-tag-filter]", picker);
    if (filter) {
      filter.addEventListener("input", function () {
        var q = filter.value.trim().toLowerCase();
        $all(".tag", picker).forEach(function (label) {
          label.hidden = q !== "" && (label.dataset.tagLabel || "").indexOf(q) < 0;
        });
        $all("[data-tag-group]", picker).forEach(function (g) {
          g.hidden = $all(".tag", g).every(function (l) { return l.hidden; });
        });
      });
      filter.addEventListener("keydown", function (evt) {
        if (evt.key === "Enter") {
          // Enter in the filter ticks the only visible tag instead of submitting.
          evt.preventDefault();
          var visible = $all(".tag", picker).filter(function (l) { return !l.hidden; });
          if (visible.length === 1) {
            var box = $("input", visible[0]);
            if (!box.disabled) { box.checked = !box.checked; update(); }
          }
          filter.value = "";
          filter.dispatchEvent(new Event("input"));
          filter.blur();
        }
      });
    }
    picker._update = update;
  }

  function tagCountOk() {
    var picker = $("#task-area [data-tag-picker]");
    if (!picker) return true;
    var n = $all("input[name=tags]:checked", picker).length;
    var min = parseInt(picker.dataset.min || "1", 10);
    var max = parseInt(picker.dataset.max || "8", 10);
    if (n >= min && n <= max) return true;
    var hint = $("#task-alert");
    if (hint) {
      hint.innerHTML = "";
      var div = document.createElement("div");
      div.className = "flash flash-error";
      div.setAttribute("role", "alert");
      div.textContent = picker.querySelector(".task-question").textContent;
      hint.appendChild(div);
    }
    return false;
  }
  document.addEventListener("submit", function (evt) {
    if (evt.target && evt.target.id === "task-form" && !tagCountOk()) {
      evt.preventDefault();
      evt.stopPropagation();
    }
  }, true);
  document.addEventListener("htmx:confirm", function (evt) {
    if (evt.detail.elt && evt.detail.elt.id === "task-form" && !tagCountOk()) evt.preventDefault();
  });

  function initCounters(root) {
    $all("[data-counter]", root).forEach(function (ta) {
      var out = ta.parentNode.querySelector("[data-char-count]");
      function upd() { if (out) out.textContent = String(ta.value.length); }
      ta.addEventListener("input", upd);
      upd();
    });
  }

  // ---- overlays --------------------------------------------------------------------------------
  function toggleHelp(force) {
    var help = $("#help-overlay");
    if (!help) return;
    help.hidden = force === undefined ? !help.hidden : !force;
  }
  function toggleInstructions() {
    var d = $("#instructions");
    if (d) {
      d.open = !d.open;
      if (d.open) d.scrollIntoView({ block: "nearest" });
    }
  }
  function openLightbox(src) {
    var box = $("#lightbox");
    if (!box) return;
    $("img", box).src = src;
    box.hidden = false;
  }
  function closeLightbox() {
    var box = $("#lightbox");
    if (box && !box.hidden) { box.hidden = true; return true; }
    return false;
  }
  function zoomNext() {
    var zooms = $all("#task-area [data-zoom]");
    if (!zooms.length) return;
    state.zoomIndex = (state.zoomIndex + 1) % zooms.length;
    openLightbox(zooms[state.zoomIndex].dataset.zoom);
  }

  document.addEventListener("click", function (evt) {
    var zoom = evt.target.closest && evt.target.closest("[data-zoom]");
    if (zoom) { evt.preventDefault(); openLightbox(zoom.dataset.zoom); return; }
    var action = evt.target.closest && evt.target.closest("[data-action]");
    if (action) {
      var a = action.dataset.action;
      if (a === "help") toggleHelp();
      else if (a === "instructions") toggleInstructions();
      else if (a === "close") closeLightbox();
      return;
    }
    if (evt.target.id === "lightbox" || (evt.target.closest && evt.target.closest("#lightbox"))) closeLightbox();
    if (evt.target.id === "help-overlay") toggleHelp(false);
  });

  document.addEventListener("change", function (evt) {
    var el = evt.target;
    if (el.matches && el.matches("[data-autosubmit]")) el.form.submit();
    // Choosing a rejection reason implies "reject"; choosing "accept" clears the reason.
    if (el.dataset && el.dataset.implies) {
      var target = $('#task-form input[value="' + el.dataset.implies + '"]');
      if (target) target.checked = true;
    }
    if (el.name === "verdict" && el.value === "accept") {
      $all('#task-form input[name="reason"]').forEach(function (r) { r.checked = r.value === ""; });
    }
  });

  // ---- keyboard --------------------------------------------------------------------------------
  function pressKeyed(el) {
    if (el.tagName === "A") { el.click(); return; }
    if (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && typing(el))) { el.focus(); return; }
    if (el.disabled) return;
    // A key pressed right after a swap may come before htmx has wired the new form: wire it
    // now, so the press goes through htmx and not as a full page post.
    var form = el.form;
    if (window.htmx && form && form.hasAttribute("hx-post") && !form["htmx-internal-data"]) {
      htmx.process(form);
    }
    if (el.type === "checkbox") {
      el.checked = !el.checked;
    } else if (el.type === "radio") {
      el.checked = true;
    } else {
      el.click();
      return;
    }
    el.dispatchEvent(new Event("change", { bubbles: true }));
    var label = el.closest("label");
    if (label) {
      label.classList.remove("flash-key");
      void label.offsetWidth;
      label.classList.add("flash-key");
    }
  }

  // An inline message that offers the next task (the task on screen was withdrawn or its lease
  // lost; an answer saved but its next task not loaded): Enter and n open it.
  function nextTaskOffer() {
    return $("#task-alert [data-next-task]") || $("#task-area [data-next-task]");
  }

  function submitTask() {
    var next = nextTaskOffer();
    if (next) { next.click(); return; }
    var form = $("#task-form");
    if (!form || form.classList.contains("htmx-request")) return;
    // The next task painted at once when the page has it ahead (lookahead.js)
    if (window.bsLookAhead && window.bsLookAhead.submit(form, Date.now() - state.started)) return;
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  }

  document.addEventListener("keydown", function (evt) {
    if (evt.defaultPrevented || evt.altKey || evt.metaKey) return;
    var active = document.activeElement;
    var key = evt.key;
    // The painted task's lease is on its way: skip, undo and report wait for it (lookahead.js)
    if (window.bsLookAhead && window.bsLookAhead.busy() && "su!".indexOf(key) >= 0 && !typing(active)) {
      evt.preventDefault();
      window.bsLookAhead.keep(key);
      return;
    }
    if (key === "Escape") {
      if (closeLightbox()) return;
      var help = $("#help-overlay");
      if (help && !help.hidden) { toggleHelp(false); return; }
      var report = $("#task-area [data-report]");
      if (report && report.open) {
        report.open = false;
        if (active && report.contains(active)) active.blur();
        return;
      }
      if (active && active !== document.body) active.blur();
      return;
    }
    if (typing(active)) {
      if (key === "Enter" && evt.ctrlKey && active.closest("#task-form")) {
        evt.preventDefault();
        submitTask();
      }
      return; // everything else is text
    }
    if (evt.ctrlKey) {
      if (key === "Enter") { evt.preventDefault(); submitTask(); }
      return;
    }
    if (key === "n" && nextTaskOffer()) {
      // the choices of a task that can no longer be answered give way to "next task"
      evt.preventDefault();
      nextTaskOffer().click();
      return;
    }
    if ($("[data-queue-key]") && queueKey(evt)) return;
    var area = $("#task-area") || document;
    // A key the task uses for a choice wins over the general keys (except the reserved ones).
    // The task's own choices (inside the form) come before the workspace's tools (undo, …).
    var keyed = null;
    if (key.length === 1 && key !== "?") {
      var esc = key.replace(/["\\]/g, "\\$&");
      var find = function (root) {
        return root && (root.querySelector('[data-key="' + esc + '"]') ||
          root.querySelector('[data-key="' + esc.toLowerCase() + '"]'));
      };
      keyed = find($("#task-area #task-form")) || find(area);
    }
    if (key === "?") { evt.preventDefault(); toggleHelp(); return; }
    if (key === "/") {
      var filter = $("#task-area [data-tag-filter]");
      if (filter) { evt.preventDefault(); filter.focus(); filter.select(); }
      return;
    }
    if (key === "s" && $("#task-area [data-skip-form]")) {
      evt.preventDefault();
      var skip = $("#task-area [data-skip-form]");
      if (skip.requestSubmit) skip.requestSubmit(); else skip.submit();
      return;
    }
    if (keyed) {
      evt.preventDefault();
      pressKeyed(keyed);
      return;
    }
    if (key === "Enter") {
      if (active && (active.tagName === "BUTTON" || active.tagName === "A" || active.tagName === "SUMMARY")) return;
      if ($("#task-form")) { evt.preventDefault(); submitTask(); }
      return;
    }
    if (key === "!") {
      var rep = $("#task-area [data-report]");
      if (rep) { evt.preventDefault(); rep.open = true; $("select", rep).focus(); }
      return;
    }
    if (key === "i") { evt.preventDefault(); toggleInstructions(); return; }
    if (key === "h") {
      var home = $("a[data-home]");
      if (home) { evt.preventDefault(); home.click(); }
      return;
    }
    if (key === "z") { evt.preventDefault(); zoomNext(); return; }
  });

  // ---- home: a queue by its number (1 then 0 opens queue 10) or by name (g) -----------------
  var typedQueue = { digits: "", timer: null };

  // What the line under the finder says: the page's translated phrases, "%s" filled in.
  function queueTypedSay(which, value) {
    var out = $("[data-queue-typed]");
    if (out) out.textContent = which ? (out.dataset[which] || "").replace("%s", value) : "";
  }
  function queueMark(number) {
    $all("[data-queue-card]").forEach(function (card) {
      var link = $("[data-queue-key]", card);
      card.classList.toggle("is-typed", !!number && link && link.dataset.queueKey === number);
    });
  }
  function queueOpen(number) {
    clearTimeout(typedQueue.timer);
    typedQueue.digits = "";
    var link = $('[data-queue-key="' + number + '"]');
    if (link) { link.click(); return; }
    queueMark("");
    queueTypedSay("sayNone", number);
  }
  // Digits add up to a queue's number; while a longer number could still follow (1 with ten
  // queues or more), wait a moment for its next digit, or Enter.
  function queueDigit(digit) {
    clearTimeout(typedQueue.timer);
    var count = $all("[data-queue-key]").length;
    var typed = typedQueue.digits + digit;
    if (typed === "0") return;
    if (parseInt(typed, 10) * 10 > count) { queueOpen(typed); return; }
    typedQueue.digits = typed;
    queueMark(typed);
    queueTypedSay("sayWait", typed);
    typedQueue.timer = setTimeout(function () { queueOpen(typed); }, 1200);
  }
  function queueKey(evt) {
    var key = evt.key;
    if (/^[0-9]$/.test(key)) { evt.preventDefault(); queueDigit(key); return true; }
    if (key === "Enter" && typedQueue.digits) {
      evt.preventDefault();
      queueOpen(typedQueue.digits);
      return true;
    }
    if (key === "g" || key === "/") {
      var finder = $("[data-queue-finder]");
      if (finder) { evt.preventDefault(); finder.focus(); finder.select(); return true; }
    }
    return false;
  }
  // The finder: a queue's number, or words of its title, project or kind (in any order).
  function queueMatches(card, query) {
    var link = $("[data-queue-key]", card);
    if (!query) return true;
    if (/^[0-9]+$/.test(query)) return link.dataset.queueKey === query;
    var title = card.dataset.queueTitle || "";
    return query.split(/\s+/).every(function (word) { return title.indexOf(word) >= 0; });
  }
  document.addEventListener("input", function (evt) {
    if (!evt.target.matches || !evt.target.matches("[data-queue-finder]")) return;
    var query = evt.target.value.trim().toLowerCase();
    var shown = 0;
    $all("[data-queue-card]").forEach(function (card) {
      card.hidden = !queueMatches(card, query);
      if (!card.hidden) shown += 1;
    });
    queueTypedSay(query ? (shown ? "sayFound" : "sayNomatch") : "", String(shown));
  });
  document.addEventListener("keydown", function (evt) {
    if (!evt.target.matches || !evt.target.matches("[data-queue-finder]")) return;
    if (evt.key === "Enter") {
      evt.preventDefault();
      var first = $all("[data-queue-card]").filter(function (c) { return !c.hidden; })[0];
      if (first) $("[data-queue-key]", first).click();
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    configureHtmx();
    maybeStart();
  });

  // Chromium can leave text laid out while its font's unicode-range slice was still loading in
  // the fallback font: with no system font for Hindi or Chinese, whole labels stay boxes after
  // the slice arrives, and a font it already shaped text with keeps them. A font feature that
  // no font has ("blnd", a new value each time) makes a font it has not used yet, so every text
  // is shaped again with what is loaded by then; the glyphs are the same.
  var reshapes = 0;
  var reshapeQueued = false;
  function reshapeNow() {
    if (reshapeQueued || !document.body) return;
    reshapeQueued = true;
    requestAnimationFrame(function () {
      reshapeQueued = false;
      reshapes += 1;
      document.body.style.fontFeatureSettings = '"blnd" ' + reshapes;
    });
  }
  // At once, and again a moment later: a face reported loaded is not always used at once.
  function reshapeText() {
    reshapeNow();
    setTimeout(reshapeNow, 250);
    setTimeout(reshapeNow, 1000);
  }
  // …and the slices the page's text needs are asked for outright (each weight in use), then
  // the text is shaped again with them.
  var SHIPPED = ["Blindspot Noto Sans SC", "Blindspot Noto Sans Devanagari"];
  function loadShippedFonts() {
    var text = (document.body && document.body.innerText) || "";
    if (!document.fonts || !document.fonts.load || !/[\u0900-\u097f\u2e80-\uffef]/.test(text)) return;
    var loads = [];
    SHIPPED.forEach(function (family) {
      ["400", "600", "700"].forEach(function (weight) {
        loads.push(document.fonts.load(weight + " 16px '" + family + "'", text).catch(function () {}));
      });
    });
    Promise.all(loads).then(reshapeText);
  }
  if (document.fonts && document.fonts.addEventListener) {
    document.fonts.addEventListener("loadingdone", reshapeText);
    document.fonts.ready.then(reshapeText);
    // (after the frame that shows new content: reading its text lays the page out)
    var later = function () { setTimeout(loadShippedFonts, 150); };
    document.addEventListener("DOMContentLoaded", later);
    document.addEventListener("htmx:afterSettle", later);
    document.addEventListener("bs:task-shown", later);
  }

  // ---- leaving the workspace -------------------------------------------------------------------
  // Closing the tab, going back or to another page releases the held task at once (the lease
  // time is only the safety net). A beacon survives the page; the CSRF token goes in its body.
  window.addEventListener("pagehide", function () {
    var area = $("#task-area");
    if (!area || !area.dataset.taskId || !area.dataset.releaseUrl || !navigator.sendBeacon) return;
    var body = new FormData();
    body.append("csrfmiddlewaretoken", csrfToken());
    navigator.sendBeacon(area.dataset.releaseUrl, body);
  });
  // Back to a page kept in the browser's cache: its task was released, so claim afresh.
  window.addEventListener("pageshow", function (evt) {
    if (evt.persisted && $("#task-area[data-release-url]")) window.location.reload();
  });
})();
