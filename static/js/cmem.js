// cmem: small progressive enhancements. Every page works without this file.
(function () {
  "use strict";

  // Live updates by short polling of /live/?obs=&sum=&prompt= (see docs/readme/07-web-app.md).
  // The server renders (and escapes) the new rows; we only insert its HTML.
  function startLive(root) {
    var status = document.getElementById("live-status");
    var interval = parseInt(root.dataset.interval, 10) || 4000;
    var mode = root.dataset.mode;
    var pending = 0;
    var timer = null;
    var failures = 0;

    function setStatus(text, off) {
      if (!status) return;
      status.hidden = false;
      status.textContent = text;
      status.classList.toggle("off", !!off);
    }

    function schedule(delay) {
      clearTimeout(timer);
      timer = setTimeout(poll, delay);
    }

    function poll() {
      if (document.hidden) return; // resumed by visibilitychange
      var params = new URLSearchParams({
        obs: root.dataset.obs, sum: root.dataset.sum, prompt: root.dataset.prompt, project: root.dataset.project || ""
      });
      fetch(root.dataset.liveUrl + "?" + params.toString(), { headers: { Accept: "application/json" }, cache: "no-store" })
        .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
        .then(function (data) {
          failures = 0;
          root.dataset.obs = data.obs; root.dataset.sum = data.sum; root.dataset.prompt = data.prompt;
          if (data.count) {
            if (mode === "insert") {
              document.getElementById("live-items").insertAdjacentHTML("afterbegin", data.html);
              var empty = document.querySelector(".empty");
              if (empty) empty.remove();
            } else {
              pending += data.count;
              document.getElementById("live-count").textContent = pending + " new item" + (pending === 1 ? "" : "s") + " since this page loaded.";
              document.getElementById("live-notice").hidden = false;
            }
          }
          setStatus("Live");
          schedule(interval);
        })
        .catch(function () {
          failures += 1;
          setStatus("Offline — retrying", true);
          schedule(Math.min(interval * Math.pow(2, failures), 60000));
        });
    }

    document.addEventListener("visibilitychange", function () { if (!document.hidden) schedule(0); });
    setStatus("Live");
    schedule(interval);
  }

  // Settings: re-render the SessionStart preview when another project is chosen.
  function startPreview(form) {
    var select = document.getElementById("preview-project");
    var out = document.getElementById("preview-text");
    if (!select || !out) return;
    select.addEventListener("change", function () {
      var url = form.dataset.previewUrl + "?project=" + encodeURIComponent(select.value);
      out.textContent = "Loading…";
      fetch(url, { cache: "no-store" })
        .then(function (r) { return r.json(); })
        .then(function (data) {
          out.textContent = data.text || "(empty: nothing to inject for this project yet)";
          history.replaceState(null, "", "?project=" + encodeURIComponent(select.value));
        })
        .catch(function () { out.textContent = "Could not load the preview."; });
    });
  }

  // "/" focuses the page's search or text filter, as on most sites.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
    var field = document.querySelector("[data-hotkey='/']");
    if (field) { e.preventDefault(); field.focus(); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    var live = document.getElementById("live");
    if (live && window.fetch) startLive(live);
    var preview = document.getElementById("preview-form");
    if (preview && window.fetch) startPreview(preview);
  });
})();
