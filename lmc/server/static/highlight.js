// Simple syntax colouring for code blocks: comments, strings, numbers and keywords, one
// tokenizer for the languages the model writes. Returns escaped HTML, one span per line.
"use strict";

const Highlight = (() => {
  const KEYWORDS = {
    python: "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield print",
    javascript: "async await break case catch class const continue default delete do else export false finally for function if import in instanceof let new null return switch this throw true try typeof undefined var while yield console",
    shell: "if then else elif fi for while do done case esac in function return export local echo cd exit",
    r: "if else repeat while function for in next break TRUE FALSE NULL Inf NaN NA library return print",
  };
  const COMMENT = { python: "#", shell: "#", r: "#", javascript: "//" };

  function escapeHtml(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function line(text, language) {
    const words = new Set((KEYWORDS[language] || KEYWORDS.python).split(" "));
    const comment = COMMENT[language] || "#";
    const pattern = /("(?:\\.|[^"\\])*"?|'(?:\\.|[^'\\])*'?|`(?:\\.|[^`\\])*`?)|(\/\/.*$|#.*$)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][\w]*)/g;
    let out = "";
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      out += escapeHtml(text.slice(last, match.index));
      const [token, str, com, num, word] = match;
      if (str !== undefined) out += `<span class="tok-str">${escapeHtml(token)}</span>`;
      else if (com !== undefined && com.startsWith(comment)) out += `<span class="tok-com">${escapeHtml(token)}</span>`;
      else if (num !== undefined) out += `<span class="tok-num">${token}</span>`;
      else if (word !== undefined && words.has(word)) out += `<span class="tok-kw">${token}</span>`;
      else out += escapeHtml(token);
      last = match.index + token.length;
    }
    return out + escapeHtml(text.slice(last));
  }

  // The whole block; with lines=true each line is a span (so the active line can be marked).
  function html(code, language, lines = false) {
    const parts = code.split("\n").map((text) => line(text, (language || "").toLowerCase()));
    if (!lines) return parts.join("\n");
    return parts.map((part, i) => `<span class="line" data-line="${i + 1}">${part}</span>`).join("");
  }

  return { html };
})();
