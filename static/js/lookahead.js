/* Blindspot: the next task painted the moment an answer is submitted (issue 28).
 *
 * Every task page carries the task most likely handed out next, rendered by the server in a
 * <template data-look-ahead> (a look-ahead: no lease is held on it; its images were preloaded).
 * When the answer on screen is complete, Enter shows that task at once and posts the answer
 * naming it (prefer=<id>); the server hands it out if it is still free. The submit's response
 * then reconciles what is on screen:
 *   - the same task: it stays as painted (with anything already pressed on it); the counters,
 *     the undo button and the next look-ahead are taken from the response;
 *   - another task, or a message that there is none: the response replaces the painted task;
 *   - a refusal (400: the answer does not fit; 409: the task was withdrawn or its lease lost)
 *     or no answer at all: the answered task comes back as it was, with the message.
 * While the answer is on its way, keys that would act on the painted task's lease (s, u, !)
 * wait and are replayed once it is settled; Enter is kept and submits the painted task once it
 * is confirmed.
 */
(function () {
  "use strict";

  // { area: painted task, previous: the answered one, keys: keys pressed on it meanwhile }
  var pending = null;

  function lookAhead(area) {
    var tpl = area && area.querySelector("template[data-look-ahead]");
    return tpl && tpl.parentNode === area ? tpl : null;
  }

  // Whether the form holds an answer its kind takes, as far as the page can tell (the server
  // still checks it: a refusal brings the task back with its message).
  function complete(form) {
    if (!form.checkValidity()) return false;
    var picker = form.querySelector("[data-tag-picker]");
    if (picker) {
      var n = form.querySelectorAll("input[name=tags]:checked").length;
      if (n < parseInt(picker.dataset.min || "1", 10) || n > parseInt(picker.dataset.max || "8", 10)) return false;
    }
    var verdict = form.querySelector("input[name=verdict]:checked");
    if (verdict && verdict.value === "accept" &&
        form.querySelector("input[data-required-criterion]:not(:checked)")) return false;
    var reason = form.querySelector("input[name=reason]:checked");
    if (verdict && verdict.value === "reject" && form.querySelector("[data-reasons]") &&
        !(reason && reason.value)) return false;
    return !form.querySelector("input[type=file]") || !form.querySelector("input[type=file]").files.length;
  }

  function process(el) {
    if (window.htmx) htmx.process(el);
  }
  function shown() {
    document.dispatchEvent(new CustomEvent("bs:task-shown"));
  }

  function submit(form, elapsedMs) {
    if (pending) {
      pending.keys.push("Enter"); // Enter on the painted task: submit it once it is confirmed
      return true;
    }
    var area = document.getElementById("task-area");
    var tpl = lookAhead(area);
    if (!tpl || !window.fetch || !window.FormData || !complete(form)) return false;
    var painted = tpl.content.firstElementChild && tpl.content.firstElementChild.cloneNode(true);
    if (!painted || !painted.dataset.taskId) return false;
    var data = new FormData(form);
    data.set("duration_ms", String(elapsedMs));
    data.set("prefer", painted.dataset.taskId);
    painted.dataset.pending = "1";
    area.replaceWith(painted);
    process(painted);
    shown();
    pending = { area: painted, previous: area, keys: [] };
    fetch(form.getAttribute("action"), {
      method: "POST",
      body: data,
      credentials: "same-origin",
      headers: { "HX-Request": "true", "HX-Current-URL": window.location.href },
    }).then(function (resp) {
      return resp.text().then(function (html) { settle(resp, html); });
    }).catch(function () { settle(null, ""); });
    return true;
  }

  function settle(resp, html) {
    var p = pending;
    pending = null;
    // Keys pressed on the painted task act on it once it is confirmed; if another task or the
    // answered one took its place, they are dropped (they were meant for what is gone).
    if (!settleArea(p, resp, html)) return;
    p.keys.forEach(function (key) {
      document.dispatchEvent(new KeyboardEvent("keydown", { key: key, bubbles: true, cancelable: true }));
    });
  }

  // Puts on screen what the response says; true when the painted task was confirmed.
  function settleArea(p, resp, html) {
    if (resp && resp.status === 200) {
      var holder = document.createElement("template");
      holder.innerHTML = html.trim();
      var fresh = holder.content.querySelector("#task-area");
      if (fresh && p.area.isConnected) {
        if (fresh.dataset.taskId && fresh.dataset.taskId === p.area.dataset.taskId) {
          reconcile(p.area, fresh);
        } else {
          p.area.replaceWith(fresh);
          process(fresh);
          shown();
        }
      }
      if (resp.headers.get("HX-Trigger")) {
        document.body.dispatchEvent(new CustomEvent("bs-answered", { bubbles: true }));
      }
      return !!fresh && fresh.dataset.taskId === p.area.dataset.taskId;
    }
    // Refused or unanswered: the answered task comes back as it was, with the message.
    if (p.area.isConnected) p.area.replaceWith(p.previous);
    delete p.previous.dataset.started;
    shown();
    var slot = p.previous.querySelector("#task-alert");
    if (!slot) return false;
    if (resp && resp.headers.get("HX-Retarget")) {
      slot.innerHTML = html;
      process(slot);
    } else {
      var div = document.createElement("div");
      div.className = "flash flash-error";
      div.setAttribute("role", "alert");
      div.textContent = slot.dataset.unsent || "";
      slot.innerHTML = "";
      slot.appendChild(div);
    }
    return false;
  }

  // The painted task was handed out: keep it on screen, take what the server knows better.
  function reconcile(area, fresh) {
    delete area.dataset.pending;
    ["[data-session-done]", "[data-today-done]"].forEach(function (sel) {
      var mine = area.querySelector(sel);
      var theirs = fresh.querySelector(sel);
      if (mine && theirs) mine.textContent = theirs.textContent;
    });
    var tools = area.querySelector(".task-meta-tools");
    var freshTools = fresh.querySelector(".task-meta-tools");
    if (tools && freshTools) {
      tools.replaceWith(freshTools);
      process(freshTools);
    }
    var next = lookAhead(fresh);
    if (next) area.appendChild(next);
    if (fresh.dataset.prefetch) {
      area.dataset.prefetch = fresh.dataset.prefetch;
      document.dispatchEvent(new CustomEvent("bs:preload", { detail: area }));
    }
  }

  window.bsLookAhead = {
    submit: submit,
    busy: function () { return pending !== null; },
    keep: function (key) { if (pending) pending.keys.push(key); },
  };
})();
