// Deliberately empty. Material's `offline` plugin adds <script src="https://unpkg.com/iframe-worker/shim">
// (a WebWorker shim so that search runs from file://) unless a polyfill whose URL names
// "iframe-worker" is configured. Naming this file keeps every page free of external requests;
// search then needs the site served over HTTP (e.g. `python -m http.server -d site`).
