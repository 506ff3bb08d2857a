(function () {
  "use strict";
  var table = document.getElementById("claims");
  var rows = Array.prototype.slice.call(document.querySelectorAll("tbody.claim"));
  var byLabel = document.getElementById("filter-label");
  var byFile = document.getElementById("filter-file");
  var search = document.getElementById("filter-text");
  var count = document.getElementById("shown");
  var order = document.getElementById("order");
  var chips = Array.prototype.slice.call(document.querySelectorAll("button.chip"));

  function apply() {
    var label = byLabel.value;
    var file = byFile.value;
    var text = search.value.trim().toLowerCase();
    var shown = 0;
    rows.forEach(function (row) {
      var ok = (!label || row.dataset.labels.split(" ").indexOf(label) !== -1) &&
        (!file || row.dataset.file === file) &&
        (!text || row.dataset.search.indexOf(text) !== -1);
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    chips.forEach(function (chip) {
      chip.setAttribute("aria-pressed", chip.dataset.filter === label ? "true" : "false");
    });
    count.textContent = shown + " of " + rows.length + " claims" +
      (label ? " (label " + label + ")" : "");
  }

  function open(row, expanded) {
    var button = row.querySelector("button.toggle");
    var detail = document.getElementById(button.getAttribute("aria-controls"));
    button.setAttribute("aria-expanded", expanded ? "true" : "false");
    detail.hidden = !expanded;
  }

  // Failed and review claims first (the page's own order), or every claim in file order.
  function sort(fileOrder) {
    var key = fileOrder ? function (row) { return [0, +row.dataset.order]; }
      : function (row) { return [+row.dataset.rank, +row.dataset.order]; };
    rows.slice().sort(function (a, b) {
      var ka = key(a), kb = key(b);
      return ka[0] - kb[0] || ka[1] - kb[1];
    }).forEach(function (row) { table.appendChild(row); });
    order.setAttribute("aria-pressed", fileOrder ? "true" : "false");
    order.textContent = fileOrder ? "order: file order" : "order: failed and review first";
  }

  // report.html#<claim id>: the claim's row, shown (filters cleared if they hid it),
  // opened and scrolled to. The anchor is compared as text, never used as a selector.
  function follow() {
    var anchor;
    try {
      anchor = decodeURIComponent(window.location.hash.slice(1));
    } catch (e) {
      return;
    }
    if (!anchor) { return; }
    var row = rows.filter(function (r) { return r.dataset.anchor === anchor; })[0];
    if (!row) { return; }
    if (row.hidden) {
      byLabel.value = "";
      byFile.value = "";
      search.value = "";
      apply();
    }
    open(row, true);
    row.scrollIntoView({block: "start"});
  }

  byLabel.addEventListener("change", apply);
  byFile.addEventListener("change", apply);
  search.addEventListener("input", apply);
  chips.forEach(function (chip) {
    chip.addEventListener("click", function () {
      byLabel.value = byLabel.value === chip.dataset.filter ? "" : chip.dataset.filter;
      apply();
    });
  });
  order.addEventListener("click", function () {
    sort(order.getAttribute("aria-pressed") !== "true");
  });
  rows.forEach(function (row) {
    var button = row.querySelector("button.toggle");
    button.addEventListener("click", function () {
      var expand = button.getAttribute("aria-expanded") !== "true";
      open(row, expand);
      // The open citation's quote (else the citations) below the window: bring the row up.
      var shown = row.querySelector("details[open] mark") || row.querySelector("tr.detail");
      if (expand && shown.getBoundingClientRect().bottom > window.innerHeight) {
        row.scrollIntoView({block: "start"});
      }
    });
  });
  window.addEventListener("hashchange", follow);
  apply();
  follow();
}());
