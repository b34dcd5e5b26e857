// Small form helpers (no framework; the forms work without them).
(function () {
  // Budget form: typing a custom cap chooses "Custom values" (a preset would otherwise be saved).
  var budget = document.getElementById("budget-form");
  if (budget) {
    var custom = budget.querySelector('input[name="preset"][value="custom"]');
    budget.querySelectorAll('input[name="epsilon"], input[name="delta"]').forEach(function (input) {
      input.addEventListener("input", function () { if (custom && input.value.trim()) custom.checked = true; });
    });
  }

  // Schema page: the count of kept columns not yet ticked as reviewed follows the ticks and kinds.
  var schema = document.getElementById("schema-form");
  if (schema) {
    var update = function () {
      var rows = schema.querySelectorAll("tr.schema-row"), kept = 0, left = 0;
      rows.forEach(function (row) {
        var kind = row.querySelector("select[name$='-kind']").value;
        var ok = row.querySelector(".review-tick").checked;
        row.classList.toggle("unreviewed", kind !== "excluded" && !ok);
        if (kind !== "excluded") { kept += 1; if (!ok) left += 1; }
      });
      schema.querySelectorAll(".review-count").forEach(function (p) {
        p.classList.toggle("done", left === 0);
        p.textContent = left ? left + " of " + kept + " kept columns not yet ticked as reviewed: confirming publishes their values as shown."
                             : "All " + kept + " kept columns ticked as reviewed.";
      });
    };
    // Integer -> categorical: an empty category list gets one code per value of the row's public range
    var maxCodes = parseInt(schema.dataset.maxCodes || "0", 10);
    var fillCodes = function (select) {
      var row = select.closest("tr.schema-row");
      var box = row && row.querySelector("textarea[name$='-categories']");
      if (!box || select.value !== "categorical" || box.value.trim()) return;
      var lo = Number(row.querySelector("input[name$='-lower']").value.trim() || "x");
      var hi = Number(row.querySelector("input[name$='-upper']").value.trim() || "x");
      if (!isFinite(lo) || !isFinite(hi) || Math.floor(hi) - Math.ceil(lo) + 1 > maxCodes || hi < lo) return;
      var codes = [];
      for (var v = Math.ceil(lo); v <= Math.floor(hi); v++) { codes.push(String(v)); }
      box.value = codes.join("\n");
      summarise(box);
    };
    // the collapsed category list's summary names its count and first categories
    var summarise = function (box) {
      var summary = box.closest("details") && box.closest("details").querySelector("summary");
      if (!summary) return;
      var cats = box.value.split("\n").map(function (c) { return c.trim(); }).filter(Boolean);
      var text = cats.join(", ");
      summary.firstChild.textContent = cats.length + (cats.length === 1 ? " category" : " categories")
        + (cats.length ? ": " + (text.length > 60 ? text.slice(0, 59) + "…" : text) : "") + " ";
    };
    schema.addEventListener("change", function (e) {
      if (e.target.matches && e.target.matches("select[name$='-kind']")) { fillCodes(e.target); }
    });
    schema.addEventListener("change", update);
    // typing a value in a row counts as reviewing it
    schema.addEventListener("input", function (e) {
      var row = e.target.closest && e.target.closest("tr.schema-row");
      if (e.target.matches && e.target.matches("textarea[name$='-categories']")) { summarise(e.target); }
      if (row && e.target.name && !/-ok$/.test(e.target.name)) { row.querySelector(".review-tick").checked = true; update(); }
    });
  }
})();
