/* Cumulative privacy spend over time (plotly.js from static/vendor, no CDN). Data come from a
   json_script element named by the chart's data-source attribute. */
(function () {
  "use strict";
  if (typeof Plotly === "undefined") { return; }
  document.querySelectorAll(".ledger-timeline").forEach(function (el) {
    if (el.dataset.drawn) { return; }
    el.dataset.drawn = "1";
    var data = JSON.parse(document.getElementById(el.dataset.source).textContent);
    var now = new Date().toISOString();
    var traces = [{
      x: data.time, y: data.epsilon, text: data.labels, name: "ε spent (cumulative)",
      type: "scatter", mode: "lines+markers", line: {shape: "hv", color: "#b3261e"},
      hovertemplate: "%{x}<br>%{text}<br>total ε %{y}<extra></extra>"
    }];
    if (data.cap_time.length) {
      traces.push({
        x: data.cap_time.concat([now]), y: data.cap_epsilon.concat([data.cap_epsilon[data.cap_epsilon.length - 1]]),
        name: "ε cap", type: "scatter", mode: "lines", line: {shape: "hv", dash: "dash", color: "#5f6b7a"},
        hovertemplate: "cap %{y}<extra></extra>"
      });
    }
    var hasDelta = data.delta.some(function (v) { return v > 0; });
    if (hasDelta) {
      traces.push({
        x: data.time, y: data.delta, name: "δ spent (cumulative)", yaxis: "y2", type: "scatter",
        mode: "lines+markers", line: {shape: "hv", color: "#2857a4"}, hovertemplate: "total δ %{y}<extra></extra>"
      });
    }
    var layout = {
      width: el.getBoundingClientRect().width || undefined, height: 260,  // fit the card it sits in
      margin: {l: 45, r: hasDelta ? 65 : 10, t: 10, b: 40}, legend: {orientation: "h", y: -0.3},
      xaxis: {nticks: 4, tickangle: 0},  // in a narrow card, auto-angled time ticks ran into the legend
      yaxis: {title: {text: "ε"}, rangemode: "tozero"},
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)"
    };
    if (hasDelta) {
      layout.yaxis2 = {title: {text: "δ"}, overlaying: "y", side: "right", rangemode: "tozero", tickformat: ".1e"};
      // scale the δ axis to the δ cap, as the ε axis shows the ε cap: a small δ spend must not look like a full budget
      var capDelta = (data.cap_delta || []).length ? data.cap_delta[data.cap_delta.length - 1] : 0;
      var topDelta = Math.max(capDelta, Math.max.apply(null, data.delta));
      if (topDelta > 0) { layout.yaxis2.range = [0, topDelta * 1.05]; }
    }
    Plotly.newPlot(el, traces, layout, {displaylogo: false, responsive: true});
  });
})();
