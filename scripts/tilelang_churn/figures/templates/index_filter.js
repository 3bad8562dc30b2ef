const f=document.getElementById('filter');
f.addEventListener('input',()=>{const q=f.value.toLowerCase().split(/\s+/).filter(Boolean);
for(const tr of document.querySelectorAll('#{{ table }} tbody tr')){
const t=(tr.textContent+' '+(tr.dataset.search||'')).toLowerCase();
tr.hidden=!q.every(w=>t.includes(w));}});
