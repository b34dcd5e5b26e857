/* Utility dashboards: draw every .dash-chart from its json_script figure with the vendored plotly.js
   (static/vendor, no CDN); poll a running evaluation and reload when it is finished. */
(function () {
  "use strict";
  if (typeof Plotly !== "undefined") {
    document.querySelectorAll(".dash-chart").forEach(function (el) {
      var fig = JSON.parse(document.getElementById(el.dataset.source).textContent);
      Plotly.newPlot(el, fig.data, fig.layout, {displaylogo: false, responsive: true});
    });
  }
  var box = document.getElementById("eval-progress");
  if (!box) { return; }
  var bar = box.querySelector(".progress span"), stage = box.querySelector(".stage");
  function poll() {
    fetch(box.dataset.statusUrl, {credentials: "same-origin"}).then(function (r) { return r.json(); })
      .then(function (s) {
        if (s.finished) { window.location.reload(); return; }
        bar.style.width = s.progress + "%"; stage.textContent = s.stage;
        window.setTimeout(poll, 1500);
      }).catch(function () { window.setTimeout(poll, 5000); });
  }
  window.setTimeout(poll, 1500);
})();
