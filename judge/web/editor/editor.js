// The submit form's editor: CodeMirror 6, bundled into /static/editor.js (no CDN). app.js uses
// window.KJEditor when this file loaded, else the plain textarea.
import { basicSetup, EditorView } from "codemirror";
import { Compartment, EditorState } from "@codemirror/state";
import { indentUnit } from "@codemirror/language";
import { keymap } from "@codemirror/view";
import { indentWithTab } from "@codemirror/commands";
import { cpp } from "@codemirror/lang-cpp";
import { python } from "@codemirror/lang-python";

// by the language's Pygments lexer name (the problem API's `lexer` of each language)
const LANGUAGES = { cpp: cpp, "cuda": cpp, c: cpp, python: python, python3: python };

function support(lexer) {
  const make = LANGUAGES[lexer] || cpp;
  return make();
}

// create(parent, { doc, lexer, onChange }) -> { get(), set(text), setLexer(lexer), focus() }
function create(parent, { doc = "", lexer = "cpp", onChange = () => {} } = {}) {
  const language = new Compartment();
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        basicSetup,
        keymap.of([indentWithTab]),
        indentUnit.of("    "),
        EditorState.tabSize.of(4),
        language.of(support(lexer)),
        EditorView.lineWrapping,
        EditorView.updateListener.of((update) => {
          if (update.docChanged) onChange(update.state.doc.toString());
        }),
        EditorView.contentAttributes.of({ "aria-label": "source", spellcheck: "false" }),
      ],
    }),
  });
  return {
    get: () => view.state.doc.toString(),
    set: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    setLexer: (lexer) => view.dispatch({ effects: language.reconfigure(support(lexer)) }),
    focus: () => view.focus(),
    view,
  };
}

window.KJEditor = { create };
