(function () {
  "use strict";
  var rows = Array.prototype.slice.call(document.querySelectorAll("tbody.claim"));
  var byLabel = document.getElementById("filter-label");
  var byFile = document.getElementById("filter-file");
  var search = document.getElementById("filter-text");
  var count = document.getElementById("shown");

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
    count.textContent = shown + " of " + rows.length + " claims";
  }

  byLabel.addEventListener("change", apply);
  byFile.addEventListener("change", apply);
  search.addEventListener("input", apply);
  Array.prototype.forEach.call(document.querySelectorAll("button.toggle"), function (button) {
    button.addEventListener("click", function () {
      var detail = document.getElementById(button.getAttribute("aria-controls"));
      var open = button.getAttribute("aria-expanded") === "true";
      button.setAttribute("aria-expanded", open ? "false" : "true");
      detail.hidden = open;
    });
  });
  apply();
}());
