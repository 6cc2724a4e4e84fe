// The source editor: a plain textarea over a backdrop that marks the error's position.
// Offsets are UTF-16 code units, as the server sends them.

export class SourceEditor {
  constructor(textarea, backdrop) {
    this.textarea = textarea;
    this.backdrop = backdrop;
    this.error = null;
    textarea.addEventListener("scroll", () => this.syncScroll());
    textarea.addEventListener("input", () => {
      this.error = null;
      this.render();
    });
    textarea.addEventListener("keydown", (event) => {
      if (event.key === "Tab" && !event.shiftKey && !event.ctrlKey && !event.altKey && !event.metaKey) {
        // Two spaces instead of leaving the editor; Escape then Tab moves focus on.
        if (this.escaped) return;
        event.preventDefault();
        textarea.setRangeText("  ", textarea.selectionStart, textarea.selectionEnd, "end");
        textarea.dispatchEvent(new Event("input", { bubbles: true }));
      }
      this.escaped = event.key === "Escape";
    });
  }

  get value() {
    return this.textarea.value;
  }

  set value(text) {
    this.textarea.value = text;
    this.error = null;
    this.render();
    this.textarea.scrollTop = 0;
    this.syncScroll();
  }

  onInput(callback) {
    this.textarea.addEventListener("input", callback);
  }

  setError(start, end) {
    const length = this.textarea.value.length;
    const from = Math.max(0, Math.min(start, length));
    this.error = { start: from, end: Math.max(from, Math.min(end ?? from + 1, length)) };
    this.render();
  }

  clearError() {
    this.error = null;
    this.render();
  }

  gotoError() {
    if (!this.error) return;
    this.textarea.focus();
    this.textarea.setSelectionRange(this.error.start, Math.max(this.error.end, this.error.start));
    this.syncScroll();
  }

  render() {
    const text = this.textarea.value;
    const backdrop = this.backdrop;
    backdrop.replaceChildren();
    if (!this.error) {
      backdrop.append(document.createTextNode(text + "\n"));
      return;
    }
    const { start, end } = this.error;
    const mark = document.createElement("mark");
    mark.className = "error-mark";
    let marked = text.slice(start, end);
    if (marked === "" || marked === "\n") marked = " " + marked; // a visible spot at an end of line
    mark.textContent = marked;
    backdrop.append(document.createTextNode(text.slice(0, start)), mark, document.createTextNode(text.slice(end) + "\n"));
    this.syncScroll();
  }

  syncScroll() {
    this.backdrop.scrollTop = this.textarea.scrollTop;
    this.backdrop.scrollLeft = this.textarea.scrollLeft;
  }
}
