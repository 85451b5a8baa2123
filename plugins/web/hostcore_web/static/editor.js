// The page editor: EasyMDE (served from this site, fetched by `make install`) over the form's
// textarea, with the wiki's own preview, wiki-link completion and uploads. Without EasyMDE the
// textarea stays, and Ctrl/Cmd+S and uploads from the file input still work.
(function () {
  "use strict";

  function post(url, data) {
    return fetch(url, { method: "POST", body: data, credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (j) {
          if (!r.ok) { throw new Error((j.error && j.error.message) || r.status + " " + r.statusText); }
          return j;
        });
      });
  }

  function setUp(area) {
    var form = area.form;
    var csrf = form.querySelector("input[name=csrf_token]").value;
    var status = document.getElementById(area.id + "-status");
    var mde = null;
    var say = function (text) { if (status) { status.textContent = text; } };
    var fields = function (extra) {
      var data = new FormData();
      data.append("csrf_token", csrf);
      Object.keys(extra).forEach(function (k) { data.append(k, extra[k]); });
      return data;
    };
    var insert = function (text, apart) {  // apart: a space first when the cursor follows a word (two files in a row)
      if (mde) {
        var cm = mde.codemirror, cur = cm.getCursor("from");
        var before = cur.ch ? cm.getRange({ line: cur.line, ch: cur.ch - 1 }, cur) : "";
        cm.replaceSelection((apart && before && !/\s/.test(before) ? " " : "") + text);
        cm.focus();
        return;
      }
      var at = area.selectionStart, end = area.selectionEnd;
      if (apart && at && !/\s/.test(area.value.charAt(at - 1))) { text = " " + text; }
      area.value = area.value.slice(0, at) + text + area.value.slice(end);
      area.selectionStart = area.selectionEnd = at + text.length;
      area.focus();
    };

    // Ctrl/Cmd+S saves the form, from anywhere on the page.
    document.addEventListener("keydown", function (e) {
      if ((e.ctrlKey || e.metaKey) && !e.altKey && (e.key === "s" || e.key === "S")) {
        e.preventDefault();
        if (mde) { area.value = mde.value(); }
        if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
      }
    });

    // Uploads: each file becomes an attachment of the page (the upload_attachment path), and its link goes in the text.
    var upload = function (files) {
      if (!area.dataset.upload) { say("Save the page first: files attach to a page that exists."); return; }
      Array.prototype.forEach.call(files, function (file) {
        say("Uploading " + file.name + "…");
        post(area.dataset.upload, fields({ file: file })).then(function (j) {
          insert(j.markdown, true);
          say("Attached " + j.filename + ".");
        }, function (err) { say("Not uploaded: " + file.name + ": " + err.message); });
      });
    };
    var picker = document.querySelector("input[data-upload-for='" + area.id + "']");
    if (picker) { picker.addEventListener("change", function () { upload(picker.files); picker.value = ""; }); }

    if (!window.EasyMDE) {
      area.addEventListener("paste", function (e) { if (e.clipboardData && e.clipboardData.files.length) { e.preventDefault(); upload(e.clipboardData.files); } });
      area.addEventListener("drop", function (e) { if (e.dataTransfer && e.dataTransfer.files.length) { e.preventDefault(); upload(e.dataTransfer.files); } });
      return;
    }

    // The preview is the page renderer's own output, asked for a moment after the typing stops.
    var timer = null, asked = 0;
    var preview = function (text, pane) {
      if (!area.dataset.preview) { return null; }
      clearTimeout(timer);
      timer = setTimeout(function () {
        var mine = ++asked;
        post(area.dataset.preview, fields({ body: text })).then(function (j) {
          if (mine === asked) { pane.innerHTML = j.html; pane.setAttribute("data-rendered", String(mine)); }
        }, function (err) { if (mine === asked) { say("Preview failed: " + err.message); } });
      }, 250);
      return null;
    };

    var E = window.EasyMDE;
    var button = function (name, action, text, title) { return { name: name, action: action, text: text, title: title }; };
    var toolbar = [
      button("bold", E.toggleBold, "B", "Bold"),
      button("italic", E.toggleItalic, "I", "Italic"),
      button("strikethrough", E.toggleStrikethrough, "S", "Strikethrough"),
      button("heading", E.toggleHeadingSmaller, "H", "Heading"),
      "|",
      button("code", E.toggleCodeBlock, "</>", "Code block"),
      button("quote", E.toggleBlockquote, "“ ”", "Quote"),
      button("unordered-list", E.toggleUnorderedList, "•", "Bulleted list"),
      button("ordered-list", E.toggleOrderedList, "1.", "Numbered list"),
      button("task", function () { insert("- [ ] "); }, "☐", "Task"),
      "|",
      button("link", E.drawLink, "Link", "Link"),
      button("wikilink", function () { insert("[["); complete(); }, "[[ ]]", "Link to a page of the wiki"),
      button("table", E.drawTable, "Table", "Table"),
    ];
    if (area.dataset.upload && picker) { toolbar.push(button("upload", function () { picker.click(); }, "Attach…", "Attach an image or file")); }
    if (area.dataset.preview) {
      toolbar.push("|");
      var side = button("side-by-side", E.toggleSideBySide, "Preview", "Preview side by side");
      side.noDisable = true;
      toolbar.push(side);
    }
    mde = new E({
      element: area,
      autoDownloadFontAwesome: false,
      spellChecker: false,
      nativeSpellcheck: true,
      forceSync: true,
      sideBySideFullscreen: false,
      minHeight: "18rem",
      previewClass: ["editor-preview", "body"],
      previewRender: preview,
      toolbar: toolbar,
      status: ["lines", "words", "cursor"],
      shortcuts: { togglePreview: null, toggleFullScreen: null, toggleSideBySide: "F9" },
    });
    var cm = mde.codemirror;
    // EasyMDE keeps its buttons out of the Tab order; a keyboard alone must reach them too.
    mde.toolbar_div.querySelectorAll("button").forEach(function (b) { b.tabIndex = 0; });
    area.dispatchEvent(new Event("editor-ready"));
    cm.getInputField().setAttribute("aria-label", document.querySelector("label[for='" + area.id + "']").textContent);
    // Esc leaves the text (Tab indents inside it): keyboard alone reaches the rest of the form.
    cm.addKeyMap({ Esc: function () { if (!menu) { form.querySelector(".savebar button").focus(); } } });
    if (area.dataset.preview && window.matchMedia("(min-width: 64rem)").matches) { mde.toggleSideBySide(); }

    cm.on("drop", function (_cm, e) {
      if (e.dataTransfer && e.dataTransfer.files.length) {
        e.preventDefault();
        cm.setCursor(cm.coordsChar({ left: e.clientX, top: e.clientY }));
        upload(e.dataTransfer.files);
      }
    });
    cm.on("paste", function (_cm, e) {
      if (e.clipboardData && e.clipboardData.files.length) { e.preventDefault(); upload(e.clipboardData.files); }
    });

    // Wiki-link completion: after "[[", the pages whose name or title holds what follows.
    var menu = null, items = [], chosen = 0, from = null, looked = 0;
    var input = cm.getInputField();
    input.setAttribute("aria-autocomplete", "list");
    var close = function () {
      if (menu) { menu.remove(); menu = null; cm.removeKeyMap(keys); }
      input.removeAttribute("aria-activedescendant");
      input.setAttribute("aria-expanded", "false");
    };
    var pick = function (i) {
      var page = items[i], here = area.dataset.namespace;
      var target = page.slug.indexOf(here + "/") === 0 ? page.slug.slice(here.length + 1) : page.slug;
      var after = cm.getRange(cm.getCursor(), { line: cm.getCursor().line, ch: cm.getCursor().ch + 2 });
      cm.replaceRange(target + (after === "]]" ? "" : "]]"), from, cm.getCursor());
      close();
      cm.focus();
    };
    var show = function () {  // the chosen page, for the eye and for a screen reader (the text keeps the focus)
      menu.querySelectorAll("li").forEach(function (li, i) { li.setAttribute("aria-selected", String(i === chosen)); });
      input.setAttribute("aria-activedescendant", area.id + "-page-" + chosen);
      menu.children[chosen].scrollIntoView({ block: "nearest" });
    };
    var keys = {
      Up: function () { chosen = (chosen + items.length - 1) % items.length; show(); },
      Down: function () { chosen = (chosen + 1) % items.length; show(); },
      Enter: function () { pick(chosen); },
      Tab: function () { pick(chosen); },
      Esc: close,
    };
    var complete = function () {
      var cur = cm.getCursor(), before = cm.getLine(cur.line).slice(0, cur.ch);
      var m = /\[\[([^\]|#\n]*)$/.exec(before);
      if (!m) { looked++; close(); return; }
      from = { line: cur.line, ch: cur.ch - m[1].length };
      var url = area.dataset.names + "?namespace=" + encodeURIComponent(area.dataset.namespace) + "&q=" + encodeURIComponent(m[1]);
      var mine = ++looked;
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).then(function (r) { return r.json(); }).then(function (j) {
        if (mine !== looked) { return; }  // a later keystroke asked again: its answer counts
        close();
        items = j.pages || [];
        if (!items.length) { return; }
        chosen = 0;
        menu = document.createElement("ul");
        menu.className = "completion";
        menu.id = area.id + "-pages";
        input.setAttribute("aria-controls", menu.id);
        input.setAttribute("aria-expanded", "true");
        menu.setAttribute("role", "listbox");
        menu.setAttribute("aria-label", "Pages");
        items.forEach(function (page, i) {
          var li = document.createElement("li");
          li.setAttribute("role", "option");
          li.id = area.id + "-page-" + i;
          li.textContent = page.title + " ";
          var slug = document.createElement("span");
          slug.className = "slug";
          slug.textContent = page.slug;
          li.appendChild(slug);
          li.addEventListener("mousedown", function (e) { e.preventDefault(); pick(i); });
          menu.appendChild(li);
        });
        var at = cm.cursorCoords(true, "page");
        menu.style.left = at.left + "px";
        menu.style.top = at.bottom + 2 + "px";
        document.body.appendChild(menu);
        show();
        cm.addKeyMap(keys);
      });
    };
    cm.on("inputRead", function () { complete(); });
    cm.on("blur", function () { setTimeout(close, 150); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("textarea[data-editor]").forEach(setUp);
  });
})();
