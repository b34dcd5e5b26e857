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
})();
