// Injected (in a copy of a report page) by layout_browser.py: measures the laid-out page once it has loaded and
// posts what it found to the wrapper page that holds it in an iframe of the width under test.
(function () {
  "use strict";
  var REASON_COLUMNS = ["reasons", "why", "what to do"];
  var REASON_LINES = 10;
  var SHORT_WORD = 40;
  var ROWS_CHECKED = 80;  // a token longer than this may have to break to fit a narrow screen; a shorter one must not

  function lineTops(rects) {
    var tops = [];
    for (var i = 0; i < rects.length; i++) {
      var r = rects[i];
      if (r.width <= 0 && r.height <= 0) continue;
      var seen = false;
      for (var j = 0; j < tops.length; j++) if (Math.abs(tops[j] - r.top) < 3) seen = true;
      if (!seen) tops.push(r.top);
    }
    return tops.length;
  }

  // Inside a closed <details> and not its summary: not drawn, so not laid out on any line.
  function folded(node) {
    for (var e = node.parentElement; e; e = e.parentElement) {
      var details = e.closest("details");
      if (!details) return false;
      if (!details.open) {
        var summary = details.querySelector(":scope > summary");
        if (!(summary && summary.contains(node))) return true;
      }
      e = details;
    }
    return false;
  }

  function textNodes(element) {
    var walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT, null), nodes = [], node;
    while ((node = walker.nextNode())) {
      if (node.parentElement && node.parentElement.closest("pre, svg, script, style")) continue;
      if (folded(node)) continue;
      if (node.data.trim()) nodes.push(node);
    }
    return nodes;
  }

  function describe(element) {
    var path = [], e = element;
    while (e && e !== document.body && path.length < 4) {
      var name = e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string" ? "." + e.className.trim().split(/\s+/).join(".") : "");
      path.unshift(name);
      e = e.parentElement;
    }
    return path.join(" > ");
  }

  // Every word of element's text (between spaces) no longer than limit with a piece (each match of pattern within
  // the word) that the browser laid out on more than one line.
  function brokenWords(element, pattern, limit) {
    var broken = [], range = document.createRange();
    textNodes(element).forEach(function (node) {
      var word, words = /\S+/g;
      while ((word = words.exec(node.data))) {
        if (word[0].length > limit) continue;
        var piece;
        pattern.lastIndex = 0;
        while ((piece = pattern.exec(word[0]))) {
          range.setStart(node, word.index + piece.index);
          range.setEnd(node, word.index + piece.index + piece[0].length);
          if (lineTops(range.getClientRects()) > 1) { broken.push(word[0]); break; }
        }
      }
    });
    return broken;
  }

  function elementLines(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    return lineTops(range.getClientRects());
  }

  // The height of what a cell shows: from the top of its first box to the bottom of its last, each child element's
  // own box (one that scrolls counts as tall as it shows), each text's lines.
  function visibleHeight(cell) {
    var top = Infinity, bottom = -Infinity, range = document.createRange(), clip = cell.getBoundingClientRect();
    Array.prototype.forEach.call(cell.childNodes, function (node) {
      var rects = [];
      if (node.nodeType === Node.ELEMENT_NODE) rects = [node.getBoundingClientRect()];
      else if (node.nodeType === Node.TEXT_NODE && node.data.trim()) { range.selectNodeContents(node); rects = range.getClientRects(); }
      Array.prototype.forEach.call(rects, function (r) {
        if (r.width <= 0 && r.height <= 0) return;
        top = Math.min(top, r.top); bottom = Math.max(bottom, r.bottom);
      });
    });
    if (bottom < top) return 0;
    // A cell that scrolls itself shows no more than its own box.
    var style = getComputedStyle(cell);
    if (style.overflowY !== "visible") { top = Math.max(top, clip.top); bottom = Math.min(bottom, clip.bottom); }
    return bottom - top;
  }

  function lineHeight(element) {
    var style = getComputedStyle(element), value = parseFloat(style.lineHeight);
    return isNaN(value) ? parseFloat(style.fontSize) * 1.2 : value;
  }

  function measure() {
    var found = {
      width: window.innerWidth, height: window.innerHeight,
      scrollWidth: document.documentElement.scrollWidth, scrollHeight: document.documentElement.scrollHeight,
      contentHeight: Math.ceil(document.body.getBoundingClientRect().bottom + window.scrollY +
                               parseFloat(getComputedStyle(document.body).marginBottom)),
      scrollY: window.scrollY, pills: 0, hostNames: 0, broken: [], tall: [], svgs: [], anchor: null
    };
    // Verdict and state pills, host names: one line each, no break anywhere (not even at a hyphen).
    var whole = [];
    document.querySelectorAll(".state").forEach(function (e) { found.pills++; whole.push(["pill", e]); });
    var hosts = document.querySelectorAll("table.hosts tr > td:first-child a, a[href$='dossier.html']");
    hosts.forEach(function (e) { found.hostNames++; whole.push(["host name", e]); });
    whole.forEach(function (pair) {
      var lines = elementLines(pair[1]);
      if (lines > 1) found.broken.push({kind: pair[0], text: pair[1].textContent, lines: lines, where: describe(pair[1])});
    });
    // Every other word of a table cell, a list item, a paragraph or a heading: not broken inside (a break at a space,
    // after a hyphen or a slash, or before "[" as in gbps[0][1] is one Unicode allows between words).
    // A table's first ROWS_CHECKED rows stand for the rest (a dossier's tables of every measurement hold thousands
    // of rows alike), so that a page of 600,000 px is measured in seconds.
    var cells = [];
    document.querySelectorAll("li, h1, h2, h3, h4, p").forEach(function (e) { cells.push(e); });
    document.querySelectorAll("table").forEach(function (table) {
      for (var r = 0; r < table.rows.length && r < ROWS_CHECKED; r++) {
        Array.prototype.forEach.call(table.rows[r].cells, function (cell) { cells.push(cell); });
      }
    });
    cells.forEach(function (e) {
      brokenWords(e, /[^\s\-\/\[]+/g, SHORT_WORD).forEach(function (word) {
        found.broken.push({kind: "word", text: word, where: describe(e)});
      });
    });
    // Reason cells (the columns headed reasons, why, what to do): what they show at most REASON_LINES lines tall.
    document.querySelectorAll("table").forEach(function (table) {
      var rows = table.rows, header = null, names = [];
      for (var r = 0; r < rows.length && !header; r++) if (rows[r].querySelector("th") && !rows[r].querySelector("td")) header = rows[r];
      if (!header) return;
      Array.prototype.forEach.call(header.cells, function (cell) {
        for (var k = 0; k < (cell.colSpan || 1); k++) names.push(cell.textContent.trim().toLowerCase());
      });
      Array.prototype.forEach.call(rows, function (row) {
        if (row === header) return;
        var column = 0;
        Array.prototype.forEach.call(row.cells, function (cell) {
          var name = names[column] || "";
          column += cell.colSpan || 1;
          if (cell.tagName !== "TD" || REASON_COLUMNS.indexOf(name) < 0) return;
          var lines = visibleHeight(cell) / lineHeight(cell);
          if (lines > REASON_LINES + 0.5) found.tall.push({column: name, text: cell.textContent.slice(0, 80), lines: Math.round(lines * 10) / 10,
                                            where: describe(cell)});
        });
      });
    });
    // The index's hosts table: as wide as it lays out against the room it has (wider scrolls inside its box), its
    // columns, and the cells holding something that scrolls itself (a scroll bar inside a cell).
    found.hostsTables = [];
    document.querySelectorAll("table.hosts").forEach(function (table) {
      var scrolling = 0;
      table.querySelectorAll("td, td *").forEach(function (e) {
        var style = getComputedStyle(e);
        if ((style.overflowY === "auto" || style.overflowY === "scroll") && e.scrollHeight > e.clientHeight + 1) scrolling++;
      });
      found.hostsTables.push({scrollWidth: table.scrollWidth, clientWidth: table.clientWidth,
                              columns: table.rows.length ? table.rows[0].cells.length : 0, scrollingCells: scrolling});
    });
    // A dossier's check tables: as wide as they lay out against the room they have (wider scrolls inside the box, and
    // the last column, the "why", is then out of sight).
    found.checksTables = [];
    document.querySelectorAll("table.checks").forEach(function (table) {
      found.checksTables.push({scrollWidth: table.scrollWidth, clientWidth: table.clientWidth, where: describe(table),
                               columns: table.rows.length ? table.rows[0].cells.length : 0,
                               widths: table.rows.length ? Array.prototype.map.call(table.rows[0].cells, function (cell) {
                                 return cell.textContent + " " + Math.round(cell.getBoundingClientRect().width); }) : []});
    });
    // Every plot: drawn at a non-zero size, and its children cover a non-zero area.
    document.querySelectorAll("svg").forEach(function (svg, index) {
      var box = svg.getBoundingClientRect(), left = Infinity, top = Infinity, right = -Infinity, bottom = -Infinity, drawn = 0;
      Array.prototype.forEach.call(svg.children, function (child) {
        if (typeof child.getBBox !== "function") return;
        var b = child.getBBox();
        if (b.width <= 0 && b.height <= 0) return;
        drawn++;
        left = Math.min(left, b.x); top = Math.min(top, b.y);
        right = Math.max(right, b.x + b.width); bottom = Math.max(bottom, b.y + b.height);
      });
      found.svgs.push({index: index, width: box.width, height: box.height, drawn: drawn,
                       area: drawn ? (right - left) * (bottom - top) : 0, where: describe(svg)});
    });
    // Opened at a fragment: where its element and the first plot after it landed in the viewport.
    if (location.hash) {
      var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target) {
        var rect = target.getBoundingClientRect(), plot = null;
        var all = document.querySelectorAll("svg");
        for (var i = 0; i < all.length; i++) {
          if (target.compareDocumentPosition(all[i]) & Node.DOCUMENT_POSITION_FOLLOWING) { plot = all[i]; break; }
        }
        var plotRect = plot ? plot.getBoundingClientRect() : null;
        found.anchor = {id: target.id, top: rect.top, bottom: rect.bottom,
                        plotTop: plotRect ? plotRect.top : null, plotBottom: plotRect ? plotRect.bottom : null,
                        plotHeight: plotRect ? plotRect.height : null};
      }
    }
    found.broken = found.broken.slice(0, 200);
    found.tall = found.tall.slice(0, 200);
    return found;
  }

  function report() {
    var found;
    try { found = measure(); } catch (error) { found = {error: String(error && error.stack || error)}; }
    window.parent.postMessage(JSON.stringify(found), "*");
  }

  if (document.readyState === "complete") setTimeout(report, 0);
  else window.addEventListener("load", function () { setTimeout(report, 0); });
})();
