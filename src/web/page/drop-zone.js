// @ts-check
/**
 * Browser module `/web/drop-zone.js`: where songs come in: the file picker, and a drop anywhere on
 * the page (without this a stray drop would navigate away to the file), the zone lit while a drag
 * is over the page.
 */

/**
 * Watches the picker and the page for songs. hooks: {accepting() whether a drop would be taken now,
 * chosen(files) songs picked with the file input, dropped(files) songs dropped on the page}.
 * @param {{zone: HTMLElement, input: HTMLInputElement}} elements
 * @param {{accepting: () => boolean, chosen: (files: File[]) => void, dropped: (files: File[]) => void}} hooks
 */
export function watchDrops(elements, hooks) {
  const zone = elements.zone;
  elements.input.addEventListener('change', function () {
    const input = elements.input;
    const files = input.files ? Array.from(input.files) : [];
    if (files.length > 0) hooks.chosen(files);
    input.value = '';
  });

  let dragDepth = 0;
  window.addEventListener('dragenter', function (event) {
    event.preventDefault();
    dragDepth++;
    zone.classList.add('is-dragging');
  });
  window.addEventListener('dragleave', function () {
    dragDepth = Math.max(0, dragDepth - 1);
    if (dragDepth === 0) zone.classList.remove('is-dragging');
  });
  window.addEventListener('dragover', function (event) {
    event.preventDefault();
    if (event.dataTransfer) event.dataTransfer.dropEffect = hooks.accepting() ? 'copy' : 'none';
  });
  window.addEventListener('drop', function (event) {
    event.preventDefault();
    dragDepth = 0;
    zone.classList.remove('is-dragging');
    const files = event.dataTransfer ? Array.from(event.dataTransfer.files) : [];
    if (files.length === 0) return;
    hooks.dropped(files);
  });
}
