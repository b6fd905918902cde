// eslint's recommended rules for the rating app's script, a classic <script> in the browser
// (transforms/report/rating_app.py inlines it into the page). Run from the repository root:
// npm ci --prefix .ci && .ci/node_modules/.bin/eslint --config .ci/eslint.config.mjs transforms/report/assets
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["transforms/report/assets/*.js"],
    languageOptions: {
      sourceType: "script",
      // the script defines its own escape() over the browser's deprecated one, on purpose
      globals: { ...globals.browser, escape: "off" },
    },
  },
];
