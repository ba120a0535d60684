// dom.js: builds DOM nodes. Every string becomes a text node (textContent)
// or an attribute value (setAttribute), never markup: trace strings (kernel
// names, NVTX text, command lines, host names) cannot inject HTML. Nothing in
// report/src may use innerHTML, outerHTML, insertAdjacentHTML or
// document.write (scripts/test_report.sh checks).

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [key, value] of Object.entries(props)) {
      if (value == null || value === false) continue;
      if (key === 'class') el.className = value;
      else if (key === 'text') el.textContent = String(value);
      else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
      else if (key === 'style' && typeof value === 'object') Object.assign(el.style, value);
      else el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// A section with a heading and an anchor for the navigation bar.
export function section(id, title, subtitle, ...children) {
  return h('section', { id, class: 'section' },
    h('div', { class: 'section-head' },
      h('h2', null, title),
      subtitle ? h('p', { class: 'section-sub' }, subtitle) : null),
    ...children);
}
