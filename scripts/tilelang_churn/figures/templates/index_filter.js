// The index's filter: a row stays shown while every word typed is in its text or its data-search (what its cells
// shorten or leave out: the kernel's settings, every pass of a long list), case ignored.
const filter = document.getElementById('filter');
filter.addEventListener('input', () => {
  const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
  for (const row of document.querySelectorAll('#{{ table }} tbody tr')) {
    const text = (row.textContent + ' ' + (row.dataset.search || '')).toLowerCase();
    row.hidden = !words.every(word => text.includes(word));
  }
});
