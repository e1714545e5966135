// cmem: small progressive enhancements. Every page works without this file.
(function () {
  "use strict";

  // Live updates by short polling of /live/?obs=&sum=&prompt= (see docs/design/web-app.md).
  // The server renders (and escapes) each new row and says where it belongs: its local day,
  // its session and its order inside the session block (`sort`, a string that sorts like
  // memory.dashboard.feed.feed_group). The timeline slots each row there; My Work only counts them.
  function fromHtml(html) {
    var t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  }

  function lastSort(block) {
    var items = block.querySelectorAll("[data-sort]");
    return items.length ? items[items.length - 1].dataset.sort : "";
  }

  // Days run newest first; a missing day is created in its place.
  function dayFor(feedRoot, item) {
    var days = feedRoot.querySelectorAll("section.day[data-day]");
    for (var i = 0; i < days.length; i++) {
      if (days[i].dataset.day === item.day) return days[i];
      if (days[i].dataset.day < item.day) {
        var made = fromHtml(item.day_html);
        feedRoot.insertBefore(made, days[i]);
        return made;
      }
    }
    var last = fromHtml(item.day_html);
    feedRoot.appendChild(last);
    return last;
  }

  // A day holds one block per session (memory.dashboard.feed.feed_group), the block with
  // the newest item first; inside a block, oldest first. The item joins its session's
  // block, which then moves to its place by its newest item; else a new block is made there.
  function placeBlock(day, block, sort) {
    var blocks = day.querySelectorAll(".block[data-session]");
    for (var i = 0; i < blocks.length; i++) {
      if (blocks[i] !== block && lastSort(blocks[i]) < sort) {
        day.insertBefore(block, blocks[i]);
        return;
      }
    }
    day.appendChild(block);
  }

  function blockFor(day, item) {
    var session = String(item.session);
    var blocks = day.querySelectorAll(".block[data-session]");
    for (var i = 0; i < blocks.length; i++) {
      if (blocks[i].dataset.session === session) return blocks[i];
    }
    var made = fromHtml(item.block_html);
    placeBlock(day, made, item.sort);
    return made;
  }

  function slot(feedRoot, item) {
    if (document.getElementById(item.id)) return false; // already shown
    var block = blockFor(dayFor(feedRoot, item), item);
    var row = fromHtml(item.html);
    row.classList.add("is-new");
    var rows = block.querySelectorAll("[data-sort]");
    var before = null;
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].dataset.sort > item.sort) { before = rows[i]; break; }
    }
    if (before) block.insertBefore(row, before); else block.appendChild(row);
    placeBlock(block.parentNode, block, lastSort(block));
    var marker = block.querySelector(".new-count");
    if (marker) {
      var n = block.querySelectorAll(".is-new").length;
      marker.textContent = n + " new";
      marker.hidden = false;
    }
    return true;
  }

  function startLive(root) {
    var status = document.getElementById("live-status");
    var interval = parseInt(root.dataset.interval, 10) || 4000;
    var mode = root.dataset.mode;
    var feedRoot = document.getElementById("feed");
    var pending = 0;
    var timer = null;
    var failures = 0;

    function setStatus(text, off) {
      if (!status) return;
      status.hidden = false;
      status.textContent = text;
      status.classList.toggle("off", !!off);
    }

    function setQueue(count) {
      var box = document.getElementById("queue-status");
      var text = document.getElementById("queue-text");
      if (!box || !text || typeof count !== "number") return;
      box.dataset.count = String(count);
      text.textContent = count ? count + " event" + (count === 1 ? "" : "s") + " waiting for compression" : "Compression queue empty";
    }

    function showNew() {
      var box = document.getElementById("live-new");
      if (!box) return;
      box.hidden = pending === 0;
      document.getElementById("live-new-count").textContent = pending + " new since this page loaded";
    }

    var clear = document.getElementById("live-new-clear");
    if (clear) clear.addEventListener("click", function () {
      pending = 0;
      document.querySelectorAll(".is-new").forEach(function (el) { el.classList.remove("is-new"); });
      document.querySelectorAll(".new-count").forEach(function (el) { el.hidden = true; el.textContent = ""; });
      showNew();
    });

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
          setQueue(data.queue);
          if (data.count) {
            if (mode === "insert" && feedRoot && data.items) {
              data.items.forEach(function (item) { if (slot(feedRoot, item)) pending += 1; });
              var empty = document.querySelector(".empty");
              if (empty && pending) empty.remove();
              showNew();
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

  // Settings: an "edited" marker on each value changed in the form (against what the page
  // was served with), a count beside the save button, and the error summary focused.
  function startSettings(form) {
    var count = document.getElementById("edited-count");
    function edited(el) {
      if (el.type === "checkbox") return el.checked !== el.defaultChecked;
      if (el.tagName === "SELECT") {
        for (var i = 0; i < el.options.length; i++) {
          if (el.options[i].selected !== el.options[i].defaultSelected) return true;
        }
        return false;
      }
      return el.value !== el.defaultValue;
    }
    function refresh(el) {
      var row = el.closest(".setting");
      if (!row) return;
      var tag = row.querySelector(".tag-edited");
      var on = edited(el) || row.classList.contains("is-edited-server");
      row.classList.toggle("is-edited", on);
      if (tag) tag.hidden = !on;
      var n = form.querySelectorAll(".setting.is-edited").length;
      if (count) count.textContent = n ? n + " edited, not saved yet" : "";
    }
    form.querySelectorAll(".setting.is-edited").forEach(function (row) { row.classList.add("is-edited-server"); });
    form.addEventListener("input", function (e) { refresh(e.target); });
    form.addEventListener("change", function (e) { refresh(e.target); });
    var summary = document.getElementById("error-summary");
    if (summary) summary.focus();
    var n = form.querySelectorAll(".setting.is-edited").length;
    if (count && n) count.textContent = n + " edited, not saved yet";
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
    var settings = document.getElementById("settings-form");
    if (settings) startSettings(settings);
  });
})();
