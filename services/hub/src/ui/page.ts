/**
 * The dev UI (MERCURE_DEV only): one static page, vanilla JS, no build step. It subscribes with
 * any matcher type, publishes public or private updates, and shows events as they arrive.
 */
export const DEV_UI_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Herald hub — dev UI</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; max-width: 70rem; }
  fieldset { margin-bottom: 1rem; }
  label { display: block; margin: .3rem 0; }
  input[type=text], textarea, select { font: inherit; }
  input[type=text], textarea { width: 100%; box-sizing: border-box; }
  #events li { font-family: ui-monospace, monospace; white-space: pre-wrap; border-bottom: 1px solid #ddd; padding: .3rem 0; }
  .status { font-weight: bold; }
</style>
</head>
<body>
<h1>Herald hub — dev UI</h1>
<p>Development mode only. Tokens typed here travel in the query string (subscribe) or the
Authorization header (publish).</p>

<fieldset>
  <legend>Subscribe</legend>
  <div id="matchers"></div>
  <button type="button" id="add-matcher">Add matcher</button>
  <label>Token (optional, for private updates) <input type="text" id="subscribe-token" autocomplete="off"></label>
  <label>Last-Event-ID (optional) <input type="text" id="last-event-id"></label>
  <button type="button" id="subscribe">Subscribe</button>
  <button type="button" id="unsubscribe" disabled>Unsubscribe</button>
  <span class="status" id="subscribe-status">not connected</span>
</fieldset>

<fieldset>
  <legend>Publish</legend>
  <label>Topics (one per line; the first is canonical) <textarea id="publish-topics" rows="2">https://example.com/demo</textarea></label>
  <label>Data <textarea id="publish-data" rows="3">hello</textarea></label>
  <label><input type="checkbox" id="publish-private"> Private</label>
  <label>Type (optional) <input type="text" id="publish-type"></label>
  <label>Id (optional) <input type="text" id="publish-id"></label>
  <label>Publisher token <input type="text" id="publish-token" autocomplete="off"></label>
  <button type="button" id="publish">Publish</button>
  <span class="status" id="publish-status"></span>
</fieldset>

<h2>Events</h2>
<ul id="events"></ul>

<script>
(function () {
  'use strict';
  var hubUrl = new URL('../', window.location.href);
  var source = null;
  var types = ['Exact', 'URLPattern', 'Regexp', 'URITemplate'];
  var parameterOf = { Exact: 'matchExact', URLPattern: 'matchURLPattern', Regexp: 'matchRegexp', URITemplate: 'matchURITemplate' };
  var $ = function (id) { return document.getElementById(id); };

  function addMatcher(type, value) {
    var row = document.createElement('div');
    var select = document.createElement('select');
    types.forEach(function (name) {
      var option = document.createElement('option');
      option.textContent = name;
      option.selected = name === type;
      select.appendChild(option);
    });
    var input = document.createElement('input');
    input.type = 'text';
    input.value = value || '';
    input.className = 'matcher-value';
    select.className = 'matcher-type';
    row.appendChild(select);
    row.appendChild(input);
    $('matchers').appendChild(row);
  }

  function show(kind, text) {
    var item = document.createElement('li');
    item.textContent = kind + ' ' + text;
    item.dataset.kind = kind;
    $('events').insertBefore(item, $('events').firstChild);
  }

  function subscribe() {
    if (source) source.close();
    var url = new URL(hubUrl.href.replace(/\\/$/, ''));
    var rows = $('matchers').children;
    for (var i = 0; i < rows.length; i++) {
      var type = rows[i].querySelector('.matcher-type').value;
      var value = rows[i].querySelector('.matcher-value').value;
      if (value) url.searchParams.append(parameterOf[type], value);
    }
    var token = $('subscribe-token').value.trim();
    if (token) url.searchParams.set('authorization', token);
    var cursor = $('last-event-id').value.trim();
    if (cursor) url.searchParams.set('lastEventID', cursor);
    source = new EventSource(url.href);
    $('subscribe-status').textContent = 'connecting';
    source.onopen = function () { $('subscribe-status').textContent = 'connected'; };
    source.onerror = function () { $('subscribe-status').textContent = 'error (retrying)'; };
    var onEvent = function (event) {
      show(event.type, 'id=' + event.lastEventId + ' data=' + event.data);
    };
    source.onmessage = onEvent;
    ['mercure'].concat(($('publish-type').value || '').split(/\\s+/).filter(Boolean)).forEach(function (name) {
      source.addEventListener(name, onEvent);
    });
    $('unsubscribe').disabled = false;
  }

  function unsubscribe() {
    if (source) source.close();
    source = null;
    $('subscribe-status').textContent = 'not connected';
    $('unsubscribe').disabled = true;
  }

  function publish() {
    var body = new URLSearchParams();
    $('publish-topics').value.split(/\\n/).map(function (t) { return t.trim(); }).filter(Boolean)
      .forEach(function (topic) { body.append('topic', topic); });
    body.set('data', $('publish-data').value);
    if ($('publish-private').checked) body.set('private', 'on');
    if ($('publish-type').value) body.set('type', $('publish-type').value);
    if ($('publish-id').value) body.set('id', $('publish-id').value);
    var headers = { 'Content-Type': 'application/x-www-form-urlencoded' };
    var token = $('publish-token').value.trim();
    if (token) headers.Authorization = 'Bearer ' + token;
    $('publish-status').textContent = 'publishing';
    fetch(hubUrl.href.replace(/\\/$/, ''), { method: 'POST', headers: headers, body: body })
      .then(function (response) {
        return response.text().then(function (text) {
          $('publish-status').textContent = response.status + ' ' + text;
        });
      })
      .catch(function (error) { $('publish-status').textContent = 'failed: ' + error; });
  }

  addMatcher('Exact', 'https://example.com/demo');
  $('add-matcher').onclick = function () { addMatcher('Exact', ''); };
  $('subscribe').onclick = subscribe;
  $('unsubscribe').onclick = unsubscribe;
  $('publish').onclick = publish;
})();
</script>
</body>
</html>
`;
