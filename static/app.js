// Pasarela's only script of its own: wires htmx to the session's CSRF token and
// shows error responses of htmx requests in the alert area.
(function () {
  "use strict";
  var token = document.querySelector('meta[name="csrf-token"]');
  document.body.addEventListener("htmx:configRequest", function (evt) {
    if (token) evt.detail.headers["X-CSRF-Token"] = token.content;
  });
  document.body.addEventListener("htmx:responseError", function (evt) {
    var alerts = document.getElementById("alerts");
    if (alerts && evt.detail.xhr.getResponseHeader("Content-Type").indexOf("text/html") === 0) {
      alerts.innerHTML = evt.detail.xhr.responseText;
    }
  });
  document.body.addEventListener("htmx:sendError", function () {
    var alerts = document.getElementById("alerts");
    if (alerts) alerts.innerHTML = '<div class="alert alert-error" role="alert">Sin conexión con el servidor. Intente de nuevo.</div>';
  });
})();
