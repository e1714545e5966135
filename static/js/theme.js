// cmem theme: light, dark or the system's, remembered in localStorage. Loaded without
// `defer` in <head> so the saved theme applies before the first paint (an external file:
// the pages' CSP allows no inline script).
(function () {
  "use strict";
  var KEY = "cmem-theme";
  var root = document.documentElement;

  function saved() {
    try {
      var value = window.localStorage.getItem(KEY);
      return value === "light" || value === "dark" ? value : "system";
    } catch (e) {
      return "system"; // storage disabled: follow the system
    }
  }

  function apply(theme) {
    if (theme === "system") root.removeAttribute("data-theme");
    else root.setAttribute("data-theme", theme);
  }

  apply(saved());

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("theme-toggle");
    var select = document.getElementById("theme-select");
    if (!box || !select) return;
    select.value = saved();
    box.hidden = false; // without this script the control could do nothing, so it stays hidden
    select.addEventListener("change", function () {
      var theme = select.value;
      try {
        if (theme === "system") window.localStorage.removeItem(KEY);
        else window.localStorage.setItem(KEY, theme);
      } catch (e) {
        /* not remembered, still applied */
      }
      apply(theme);
    });
  });
})();
