// Progressive enhancement only: every page works without it.
(function () {
  "use strict";
  // Draw mermaid fences when the page loaded mermaid (served from this site, never a CDN).
  document.addEventListener("DOMContentLoaded", function () {
    if (window.mermaid && document.querySelector("pre.mermaid")) {
      var dark = document.body.classList.contains("dark");
      window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: dark ? "dark" : "default" });
      window.mermaid.run({ querySelector: "pre.mermaid" });
    }
    // The page tree starts folded on a phone, so the page comes first.
    var tree = document.getElementById("page-tree");
    if (tree && window.matchMedia("(max-width: 48rem)").matches) { tree.open = false; }
    // Select a new token on focus so it is easy to copy.
    var token = document.getElementById("new-token");
    if (token) { token.addEventListener("focus", function () { token.select(); }); token.focus(); }
    // Ask before leaving an editor with unsaved text.
    var editor = document.querySelector("form.editor textarea");
    if (editor) {
      var initial = editor.value, form = editor.form;
      var leaving = function (e) { if (editor.value !== initial) { e.preventDefault(); e.returnValue = ""; } };
      window.addEventListener("beforeunload", leaving);
      form.addEventListener("submit", function () { window.removeEventListener("beforeunload", leaving); });
    }
  });
})();
