// Pasarela's only script of its own: wires htmx to the session's CSRF token,
// shows error responses of htmx requests in the alert area, keeps filter URLs
// clean, moves focus after a swap, opens the phone menu, copies secrets.
(function () {
  "use strict";
  var token = document.querySelector('meta[name="csrf-token"]');
  var body = document.body;
  // Styles may hide what only a page without script needs (a form's "Guardar"
  // when htmx saves on change).
  document.documentElement.classList.add("js");

  body.addEventListener("htmx:configRequest", function (evt) {
    if (token) evt.detail.headers["X-CSRF-Token"] = token.content;
    // A filter left empty is no filter: keep it out of the (pushed) URL.
    if (evt.detail.verb === "get") {
      var params = evt.detail.parameters;
      Object.keys(params).forEach(function (k) {
        if (params[k] === "" || k === "_csrf") delete params[k];
      });
    }
  });

  function alertArea(html) {
    var alerts = document.getElementById("alerts");
    if (alerts) alerts.innerHTML = html;
  }
  body.addEventListener("htmx:responseError", function (evt) {
    var type = evt.detail.xhr.getResponseHeader("Content-Type") || "";
    if (type.indexOf("text/html") === 0) alertArea(evt.detail.xhr.responseText);
  });
  body.addEventListener("htmx:sendError", function () {
    alertArea('<div class="alert alert-error" role="alert">Sin conexión con el servidor. Intente de nuevo.</div>');
  });

  // When the element that asked for the swap is gone (a pager link, a form
  // replaced by its result), focus would fall to <body>: move it to the new
  // region instead, so keyboard and screen-reader users stay in place.
  body.addEventListener("htmx:afterSwap", function (evt) {
    var trigger = evt.detail.requestConfig && evt.detail.requestConfig.elt;
    if (trigger && document.contains(trigger) && trigger !== evt.detail.target) return;
    var region = evt.detail.target;
    if (!document.contains(region)) region = document.getElementById(region.id) || document.getElementById("content");
    if (!region) return;
    if (!region.hasAttribute("tabindex")) region.setAttribute("tabindex", "-1");
    region.focus({ preventScroll: false });
  });

  // Upload progress: the form's <progress> follows the bytes sent.
  body.addEventListener("htmx:xhr:progress", function (evt) {
    var bar = evt.target.querySelector && evt.target.querySelector("progress.upload-progress");
    if (bar && evt.detail.lengthComputable) bar.value = Math.round(evt.detail.loaded / evt.detail.total * 100);
  });

  // Phone menu: the sidebar hides behind a button below 900 px.
  var menu = document.getElementById("menu-button");
  var sidebar = document.getElementById("sidebar");
  if (menu && sidebar) {
    var setOpen = function (open) {
      menu.setAttribute("aria-expanded", open ? "true" : "false");
      sidebar.classList.toggle("open", open);
    };
    menu.addEventListener("click", function () { setOpen(menu.getAttribute("aria-expanded") !== "true"); });
    document.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && menu.getAttribute("aria-expanded") === "true") { setOpen(false); menu.focus(); }
    });
  }

  // Copy buttons: data-copy names the element whose data-token is copied.
  body.addEventListener("click", function (e) {
    var btn = e.target.closest("[data-copy]");
    if (!btn) return;
    var src = document.getElementById(btn.getAttribute("data-copy"));
    if (!src || !navigator.clipboard) return;
    navigator.clipboard.writeText(src.getAttribute("data-token") || src.textContent).then(function () {
      btn.textContent = "Copiado";
    });
  });
})();

// Charts: an element with data-points="[[unix seconds…], [values…]]" becomes a
// uPlot chart (loaded only on pages that chart), redrawn to its width.
(function () {
  "use strict";
  function draw(el) {
    if (!window.uPlot || el.dataset.drawn) return;
    var data = JSON.parse(el.dataset.points);
    el.dataset.drawn = "1";
    var opts = {
      width: Math.max(el.clientWidth, 200), height: 200,
      legend: { show: false },
      // Hours in the user's time zone, as every date of the console.
      tzDate: function (ts) { return window.uPlot.tzDate(new Date(ts * 1e3), el.dataset.tz || "UTC"); },
      scales: { x: { time: true }, y: { range: function (u, min, max) { return [0, Math.max(max, 1)]; } } },
      // Hours as 24-hour clock times, as dates are written everywhere else.
      axes: [{ stroke: "#59636e", values: function (u, splits) {
        return splits.map(function (v) {
          var d = window.uPlot.tzDate(new Date(v * 1e3), el.dataset.tz || "UTC");
          return ("0" + d.getHours()).slice(-2) + ":" + ("0" + d.getMinutes()).slice(-2);
        });
      } }, { stroke: "#59636e" }],
      series: [{}, { label: "Notificaciones", stroke: "#4338ca", fill: "rgba(67,56,202,.12)", width: 2, points: { show: false } }]
    };
    var chart = new window.uPlot(opts, data, el);
    window.addEventListener("resize", function () { chart.setSize({ width: Math.max(el.clientWidth, 200), height: 200 }); });
  }
  function drawAll() { document.querySelectorAll("[data-points]").forEach(draw); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", drawAll); else drawAll();
  document.body.addEventListener("htmx:afterSettle", drawAll);
})();

// Task board: drag a card with SortableJS. A drop is one request, sent from
// the source list's "end" event (which fires once per move, within a column
// or across): the target state, the id of the card now directly above it
// (despues_de, 0 at the top) and the version the card was read at. The answer
// is the board as the server has it, so a refused move snaps back.
(function () {
  "use strict";
  // Another admin changed the board (live.go): reload it with the filters of
  // the URL. While a card is held the reload waits: swapping the board would
  // drop the card from the hand.
  var dragging = false, refreshWaiting = false;
  function refreshBoard() {
    window.htmx.ajax("GET", "/app/tareas" + location.search, { target: "#board", swap: "outerHTML" });
  }
  document.body.addEventListener("sse:tablero", function () {
    if (!document.getElementById("board")) return;
    if (dragging) { refreshWaiting = true; return; }
    refreshBoard();
  });
  function init() {
    if (!window.Sortable) return;
    document.querySelectorAll("ol.cards").forEach(function (list) {
      if (list.dataset.sortable) return;
      list.dataset.sortable = "1";
      window.Sortable.create(list, {
        group: "board", animation: 150, filter: "select, a", preventOnFilter: false,
        // Mouse and touch events rather than native drag and drop: the same on
        // every browser and phone, and drivable from a test.
        forceFallback: true,
        onStart: function () { dragging = true; refreshWaiting = false; },
        onEnd: function (evt) {
          dragging = false;
          if (evt.from === evt.to && evt.oldIndex === evt.newIndex) {
            if (refreshWaiting) refreshBoard();
            return;
          }
          var card = evt.item, above = card.previousElementSibling;
          window.htmx.ajax("PUT", "/tarea/" + card.dataset.taskId + "/estado", {
            target: "#board", swap: "outerHTML",
            values: { estado: evt.to.closest("[data-estado]").dataset.estado, despues_de: above ? above.dataset.taskId : "0", version: card.dataset.version }
          });
        }
      });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
  document.body.addEventListener("htmx:afterSettle", init);
  // A move that never reached the server: show the board as it is.
  document.body.addEventListener("htmx:sendError", function (evt) {
    if (document.getElementById("board") && evt.detail.requestConfig && /\/estado$/.test(evt.detail.requestConfig.path || "")) {
      refreshBoard();
    }
  });
})();

// Live updates (server/live.go): htmx-ext-sse keeps the page's event stream.
// A browser holds at most six connections to a server over HTTP/1.1, and a
// stream is one of them: a page that is left (and may sit in the
// back-forward cache) or a tab that stays hidden closes its stream, and
// opens it again when shown, from the last event it saw, so it catches up.
(function () {
  "use strict";
  var source = null, lastId = "", generation = 0, hideTimer = null, opening = false;
  document.body.addEventListener("htmx:sseOpen", function (evt) { source = evt.detail.source; opening = false; });
  document.body.addEventListener("htmx:sseMessage", function (evt) {
    if (evt.detail && evt.detail.lastEventId) lastId = evt.detail.lastEventId;
  });
  function pause() {
    clearTimeout(hideTimer);
    if (source) { source.close(); source = null; }
    opening = false;
  }
  function resume() {
    clearTimeout(hideTimer);
    var shell = document.querySelector("[sse-connect]");
    if (source || opening || !shell || !window.htmx) return;
    opening = true;
    if (!lastId) lastId = decodeURIComponent((/desde=([^&]*)/.exec(shell.getAttribute("sse-connect")) || ["", ""])[1]);
    generation++;
    // Changed attributes make htmx set the elements up again: a new stream
    // on the shell, and the swaps and triggers listening to it.
    shell.setAttribute("sse-connect", "/app/eventos?desde=" + encodeURIComponent(lastId) + "&r=" + generation);
    shell.querySelectorAll("[sse-swap], [hx-trigger^='sse:']").forEach(function (el) { el.setAttribute("data-live", generation); });
    window.htmx.process(shell);
  }
  window.addEventListener("pagehide", pause);
  window.addEventListener("pageshow", function (evt) { if (evt.persisted) resume(); });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") {
      clearTimeout(hideTimer);
      hideTimer = setTimeout(pause, 10000);
    } else {
      resume();
    }
  });
})();

// Server metrics (/app/servidor/:id): the history of the chosen range, one
// uPlot chart per group of series, hours in the user's zone. Where heartbeats
// are missing the line breaks (a null point) instead of joining across.
(function () {
  "use strict";
  var colors = { cpu: "#4338ca", ram: "#0f766e", swap: "#b45309", disk: "#b3261e", tcp: "#4338ca", load1: "#4338ca" };
  var names = { cpu: "CPU %", ram: "RAM %", swap: "Swap %", disk: "Disco %", tcp: "Conexiones", load1: "Carga" };
  function two(n) { return ("0" + n).slice(-2); }
  function stamp(v, tz, withDay) {
    var d = window.uPlot.tzDate(new Date(v * 1e3), tz);
    var hm = two(d.getHours()) + ":" + two(d.getMinutes());
    return withDay ? two(d.getDate()) + "-" + two(d.getMonth() + 1) + " " + hm : hm;
  }
  function columns(points, keys, maxGap) {
    var xs = [], cols = keys.map(function () { return []; });
    points.forEach(function (p) {
      var t = Date.parse(p.t) / 1000;
      if (xs.length && t - xs[xs.length - 1] > maxGap) {
        xs.push(xs[xs.length - 1] + 1);
        cols.forEach(function (c) { c.push(null); });
      }
      xs.push(t);
      keys.forEach(function (k, i) { cols[i].push(p[k]); });
    });
    return [xs].concat(cols);
  }
  function draw(section, data, horas) {
    var tz = section.dataset.tz || "UTC", interval = +section.dataset.interval || 30;
    // The server's bucket (see metricsHistory): a gap is three of them, or
    // three heartbeat intervals, without a point.
    var bucket = Math.ceil(horas * 3600 / 999), maxGap = 3 * Math.max(interval, bucket);
    section.querySelectorAll(".chart[data-series]").forEach(function (el) {
      if (el._chart) { el._chart.destroy(); el._chart = null; }
      var keys = el.dataset.series.split(",");
      var opts = {
        width: Math.max(el.clientWidth, 200), height: 180,
        tzDate: function (ts) { return window.uPlot.tzDate(new Date(ts * 1e3), tz); },
        scales: { x: { time: true } },
        // 24-hour clock times (and the day, over more than a day), as dates are written everywhere else.
        axes: [{ stroke: "#59636e", values: function (u, splits) { return splits.map(function (v) { return stamp(v, tz, horas > 24); }); } },
          { stroke: "#59636e" }],
        series: [{ label: "Hora", value: function (u, v) { return v == null ? "--" : stamp(v, tz, true); } }].concat(keys.map(function (k) { return { label: names[k], stroke: colors[k], width: 2, points: { show: false } }; }))
      };
      el._chart = new window.uPlot(opts, columns(data.puntos, keys, maxGap), el);
      el.dataset.count = String(data.puntos.length);
    });
  }
  function load(section, horas) {
    var seq = section._seq = (section._seq || 0) + 1;
    var status = section.querySelector("#metrics-status");
    status.textContent = "Cargando…";
    section.querySelectorAll("[data-horas]").forEach(function (b) { b.setAttribute("aria-pressed", b.dataset.horas === String(horas) ? "true" : "false"); });
    fetch(section.dataset.metricsUrl + "?horas=" + horas, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (data) {
        if (seq !== section._seq) return; // a later range was asked for meanwhile
        section.dataset.horas = String(horas);
        status.textContent = data.puntos.length ? data.puntos.length + " puntos" : "Sin latidos en este rango.";
        draw(section, data, horas);
      })
      .catch(function (err) {
        if (seq === section._seq) status.textContent = "No se pudieron cargar las métricas (" + err.message + ").";
      });
  }
  function init() {
    var section = document.getElementById("metrics");
    if (!section || !window.uPlot || section.dataset.ready) return;
    section.dataset.ready = "1";
    section.addEventListener("click", function (e) {
      var b = e.target.closest("[data-horas]");
      if (b) load(section, +b.dataset.horas);
    });
    window.addEventListener("resize", function () {
      section.querySelectorAll(".chart[data-series]").forEach(function (el) {
        if (el._chart) el._chart.setSize({ width: Math.max(el.clientWidth, 200), height: 180 });
      });
    });
    load(section, 24);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
