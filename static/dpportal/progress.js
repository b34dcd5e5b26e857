// Polls the release status endpoint and updates the progress bar; reloads once when finished.
(function () {
  var box = document.getElementById("progress-box");
  if (!box || box.dataset.finished === "1") return;
  var url = box.dataset.statusUrl;
  function tick() {
    fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (s) {
        document.getElementById("progress-bar").style.width = s.progress + "%";
        document.getElementById("progress-percent").textContent = Math.round(s.progress) + "%";
        document.getElementById("progress-stage").textContent = s.stage;
        document.getElementById("status-pill").textContent = s.status;
        var timing = document.getElementById("progress-timing");
        if (timing && s.timing_text !== undefined) { timing.textContent = s.timing_text; }
        var note = document.getElementById("cancel-note");
        if (note && s.cancel_note !== undefined) { note.textContent = s.cancel_note; }
        var cancel = document.getElementById("cancel-form");
        if (cancel && s.can_cancel === false) { cancel.hidden = true; }
        if (s.finished) { window.location.reload(); } else { setTimeout(tick, 700); }
      })
      .catch(function () { setTimeout(tick, 3000); });
  }
  setTimeout(tick, 300);
})();
