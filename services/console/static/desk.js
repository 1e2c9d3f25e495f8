// Arrow keys step through a hand: ← follows the page's rel="prev" link, → its
// rel="next" (the same links the buttons are; nothing happens while typing in a field).
document.addEventListener("keydown", function (event) {
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
  var target = event.target;
  if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
  var step = event.key === "ArrowLeft" ? "prev" : event.key === "ArrowRight" ? "next" : null;
  if (!step) return;
  var link = document.querySelector('a[data-step="' + step + '"]');
  if (link) {
    event.preventDefault();
    link.click();
  }
});
