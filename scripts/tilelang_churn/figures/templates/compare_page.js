const D=JSON.parse(document.getElementById('data').textContent);
const $=id=>document.getElementById(id);
const opt={wrap:$('opt-wrap').checked,ws:$('opt-ws').checked,hide:$('opt-hide').checked};
const squash=s=>s.replace(/\s+/g,' ').trim();
// a shortest edit script of a against b (LCS): [0,i,j] in both, [2,i,-1] only in a, [1,-1,j] only in b; in a
// changed stretch a's items come first. Past 4M cells the stretch is one replacement.
function lcs(a,b,eq){
 const head=[],tail=[];let s=0,ea=a.length,eb=b.length;
 while(s<ea&&s<eb&&eq(a[s],b[s])){head.push([0,s,s]);s++;}
 while(ea>s&&eb>s&&eq(a[ea-1],b[eb-1])){ea--;eb--;tail.push([0,ea,eb]);}
 const n=ea-s,m=eb-s,out=head;
 if(n*m>4e6){for(let i=s;i<ea;i++)out.push([2,i,-1]);for(let j=s;j<eb;j++)out.push([1,-1,j]);}
 else{const w=m+1,L=new Uint32Array((n+1)*w);
  for(let i=n-1;i>=0;i--)for(let j=m-1;j>=0;j--)
   L[i*w+j]=eq(a[s+i],b[s+j])?L[(i+1)*w+j+1]+1:Math.max(L[(i+1)*w+j],L[i*w+j+1]);
  let i=0,j=0;
  while(i<n||j<m){
   if(i<n&&j<m&&eq(a[s+i],b[s+j])){out.push([0,s+i,s+j]);i++;j++;}
   else if(j>=m||(i<n&&L[(i+1)*w+j]>=L[i*w+j+1])){out.push([2,s+i,-1]);i++;}
   else{out.push([1,-1,s+j]);j++;}}}
 return out.concat(tail.reverse());}
const tokens=s=>s.match(/\w+|\s+|[^\w\s]/g)||[];
const isSpace=t=>/^\s/.test(t);
// word-level highlight of two lines: their segments [text, differs]; none when they share under a third
function words(x,y){
 const a=tokens(x),b=tokens(y);
 const ops=lcs(a,b,opt.ws?(p,q)=>p===q||(isSpace(p)&&isSpace(q)):(p,q)=>p===q);
 const sa=[],sb=[];let common=0;
 const push=(segs,t,d)=>{const l=segs[segs.length-1];if(l&&l[1]===d)l[0]+=t;else segs.push([t,d]);};
 for(const [k,i,j] of ops){
  if(k===0){push(sa,a[i],false);push(sb,b[j],false);if(!isSpace(a[i]))common+=a[i].length;}
  else if(k===2)push(sa,a[i],!isSpace(a[i])||!opt.ws);else push(sb,b[j],!isSpace(b[j])||!opt.ws);}
 const size=Math.max(squash(x).length,squash(y).length);
 return size&&common*3<size?null:[sa,sb];}
// the n-th item of xs beside the n-th of ys, their words highlighted where the lines are alike enough (with
// sameSign only where both carry the same + or -), then both runs onto out
function pairInOrder(xs,ys,out,sameSign){
 for(let x=0;x<Math.min(xs.length,ys.length);x++){
  if(sameSign&&xs[x].p!==ys[x].p)continue;
  const w=words(xs[x].t,ys[x].t);if(w){xs[x]={...xs[x],seg:w[0]};ys[x]={...ys[x],seg:w[1]};}}
 out.push(...xs,...ys);}
// a changed stretch of a diff (its lines removed, then added): lines equal up to whitespace pair up first (with
// whitespace ignored they show once, as re-indented: 'w'); the others pair in order for word highlighting
function refine(items){
 const out=[];let k=0;
 while(k<items.length){
  if(items[k].k!=='d'&&items[k].k!=='a'){out.push(items[k++]);continue;}
  const dels=[],adds=[];
  while(k<items.length&&(items[k].k==='d'||items[k].k==='a'))(items[k].k==='d'?dels:adds).push(items[k++]);
  let rd=[],ra=[];
  const flush=()=>{pairInOrder(rd,ra,out,false);rd=[];ra=[];};
  for(const [o,i,j] of lcs(dels,adds,(p,q)=>squash(p.t)===squash(q.t))){
   if(o!==0){(o===2?rd:ra).push(o===2?dels[i]:adds[j]);continue;}
   flush();
   if(opt.ws)out.push({...adds[j],k:'w',p:'~',title:'only its whitespace changed'});
   else pairInOrder([dels[i]],[adds[j]],out,false);}
  flush();}
 return out;}
const PREFIX=[' ','+','-',''],KIND=['c','a','d','h'];
function decode(codes){return (codes||[]).map(v=>({k:KIND[v&3],p:PREFIX[v&3],t:D.lines[v>>2]}));}
function paint(pre,items,empty){
 pre.textContent='';
 if(!items||!items.length){const s=document.createElement('span');s.className='m';s.textContent=empty;
  pre.appendChild(s);return;}
 const frag=document.createDocumentFragment();
 for(const it of items){const s=document.createElement('span');s.className=it.k;
  if(it.title)s.title=it.title;
  if(it.g!==undefined){const g=document.createElement('b');g.className='g';g.textContent=it.g;s.appendChild(g);}
  s.appendChild(document.createTextNode(it.p));
  if(it.seg)for(const [t,d] of it.seg){if(d){const e=document.createElement('em');e.textContent=t;s.appendChild(e);}
   else s.appendChild(document.createTextNode(t));}
  else s.appendChild(document.createTextNode(it.t));
  frag.appendChild(s);}
 pre.appendChild(frag);}
// a whole-text diff with three lines of context, as the frontend view shows it
function textDiff(a,b){
 const ops=lcs(a,b,opt.ws?(p,q)=>squash(p)===squash(q):(p,q)=>p===q);
 if(ops.every(o=>o[0]===0))return [];
 const near=new Uint8Array(ops.length);
 ops.forEach((o,x)=>{if(o[0]!==0)for(let y=Math.max(0,x-3);y<=Math.min(ops.length-1,x+3);y++)near[y]=1;});
 for(let x=1;x+1<ops.length;x++)if(!near[x]&&near[x-1]&&near[x+1])near[x]=1;  // no '1 equal line' hunk
 const items=[];let gap=0;
 ops.forEach(([o,i,j],x)=>{
  if(!near[x]){gap++;return;}
  if(gap){items.push({k:'h',p:'',t:'@@ '+gap+' equal lines @@'});gap=0;}
  if(o===0&&a[i]===b[j]){items.push({k:'c',p:' ',t:b[j]});return;}
  if(i>=0)items.push({k:'d',p:'-',t:a[i]});if(j>=0)items.push({k:'a',p:'+',t:b[j]});});
 if(gap)items.push({k:'h',p:'',t:'@@ '+gap+' equal lines @@'});
 return refine(items);}
// the third view: one release's edit against the other's, over their changed lines (+ and -)
function editDiff(r){
 const mine=side=>decode(side&&side.diff).filter(it=>it.k==='a'||it.k==='d');
 const a=mine(r.old),b=mine(r.new);
 const key=it=>it.p+(opt.ws?squash(it.t):it.t);
 const ops=lcs(a,b,(p,q)=>key(p)===key(q));
 const out=[];let ro=[],rn=[];
 const flush=()=>{pairInOrder(ro,rn,out,true);ro=[];rn=[];};
 for(const [o,i,j] of ops){
  if(o===0){flush();out.push({k:'c',g:'both',p:b[j].p,t:b[j].t});}
  else if(o===2)ro.push({k:'o',g:D.old,p:a[i].p,t:a[i].t});else rn.push({k:'n',g:D.new,p:b[j].p,t:b[j].t});}
 flush();return fold(out,c=>c.k==='c','lines both edits share');}
// runs of more than seven lines that pass the test shrink to their first and last two and a count between
function fold(items,test,what){
 const out=[];let k=0;
 while(k<items.length){
  if(!test(items[k])){out.push(items[k++]);continue;}
  let e=k;while(e<items.length&&test(items[e]))e++;
  if(e-k>7){out.push(...items.slice(k,k+2),{k:'h',p:'',t:'@@ '+(e-k-4)+' '+what+' @@'},...items.slice(e-2,e));}
  else out.push(...items.slice(k,e));
  k=e;}
 return out;}
function sideText(side,rel){if(!side)return 'no run of this pass in '+rel;
 if(side.why)return side.pass+' (step '+side.step+'): '+side.why+(side.error?'\n'+side.error:'');
 return side.pass+' (step '+side.step+'): no change (no-op)';}
function title(side,rel){if(!side)return rel+': —';
 let t=rel+': '+side.pass+' step '+side.step+', '+side.status;
 if(side.added!==null)t+=' +'+side.added+'/-'+side.deleted;
 if(side.seconds!==null)t+=', '+(side.seconds*1000).toFixed(2)+' ms';return t;}
const rows=[...document.querySelectorAll('#seq tbody tr[data-k]')];
let cur=-1;
function editView(r){
 const pre=$('edit-diff');
 if(!r.old||!r.new){paint(pre,[],'only '+(r.old?D.old:D.new)+' runs this pass: its edit above is the whole difference');return;}
 if(!r.old.diff&&!r.new.diff){paint(pre,[],r.same===null?'edit unknown: '+(r.old.why||r.new.why||''):'neither run changes the IR');return;}
 const items=editDiff(r);
 if(items.every(it=>it.k==='c'||it.k==='h'))$('edit-title').textContent='the two edits, line by line: the same'+(opt.ws?' (whitespace ignored)':'');
 paint(pre,items,'');}
function show(){
 const r=D.rows[cur];
 $('old-title').textContent=title(r.old,D.old);$('new-title').textContent=title(r.new,D.new);
 for(const side of ['old','new']){const a=$(side+'-src'),run=r[side],link=run&&(D.src[side]||{})[run.pass];
  a.hidden=!link;if(!link)continue;a.href=link[0];
  a.textContent=link[1]==='definition'?'source at '+(side==='old'?D.old:D.new):'search the source';}
 paint($('old-diff'),r.old&&r.old.diff&&refine(decode(r.old.diff)),sideText(r.old,D.old));
 paint($('new-diff'),r.new&&r.new.diff&&refine(decode(r.new.diff)),sideText(r.new,D.new));
 $('edit-title').textContent=D.old+"'s edit against "+D.new+"'s: orange only in "+D.old+', blue only in '+D.new;
 editView(r);
 $('verdict').textContent=(r.same===null?'':r.same?'the same edit in both releases':'the edits differ')+
  (r.state?' · the IR between the releases: '+r.state:'');
 $('finding').hidden=true;}
function choose(k,scroll){
 if(k<0||k>=rows.length)return;
 rows.forEach(r=>r.classList.remove('sel'));cur=k;const tr=rows[k];tr.classList.add('sel');
 if(scroll)tr.scrollIntoView({block:'nearest'});
 show();history.replaceState(null,'','#pass='+passRef(k));}
function visible(k){return k>=0&&k<rows.length&&!rows[k].hidden;}
function step(from,dir,test){for(let k=from+dir;k>=0&&k<rows.length;k+=dir)if(visible(k)&&(!test||test(k)))return k;return -1;}
const differs=k=>D.rows[k].same===false||D.rows[k].op!=='kept';
// a permalink names a pass, not a position: NAME, or NAME.N for its N-th run in the sequence
function passRef(k){const r=D.rows[k],name=(r.new||r.old).pass;let n=0;
 for(let x=0;x<=k;x++){const q=D.rows[x];if((q.new||q.old).pass===name)n++;}
 return encodeURIComponent(name)+(n>1?'.'+n:'');}
// a permalink whose escapes do not decode (#pass=%) names no pass: the page opens as without one
function decoded(text){try{return decodeURIComponent(text);}catch(e){return null;}}
function fromHash(){const h=location.hash;let m=/pos=(\d+)/.exec(h);if(m)return +m[1];
 m=/pass=([^&]+)/.exec(h);if(!m)return null;const ref=decoded(m[1]);if(ref===null)return null;
 for(let k=0;k<rows.length;k++)if(decoded(passRef(k))===ref)return k;
 return null;}
function applyHide(){
 rows.forEach((tr,k)=>{tr.hidden=opt.hide&&D.rows[k].same===true;});
 document.querySelectorAll('#seq tr.phase').forEach(tr=>{let n=tr.nextElementSibling,any=false;
  while(n&&!n.classList.contains('phase')){if(!n.hidden)any=true;n=n.nextElementSibling;}tr.hidden=!any;});
 if(cur>=0&&!visible(cur)){const k=step(cur,1)>=0?step(cur,1):step(cur,-1);if(k>=0)choose(k,true);}}
function frontend(){
 const a=(D.init.old||[]).map(i=>D.lines[i]),b=(D.init.new||[]).map(i=>D.lines[i]);
 if(!D.init.old||!D.init.new){paint($('initial-diff'),[],'not in the archives');return;}
 paint($('initial-diff'),textDiff(a,b),opt.ws?'identical (whitespace ignored)':'identical (after normalisation)');}
function finding(){
 if(cur<0)return;
 const r=D.rows[cur],name=(r.new||r.old).pass,url=location.href.split('#')[0]+'#pass='+passRef(cur);
 const block=side=>side&&side.diff?'```diff\n'+decode(side.diff).map(it=>it.p+it.t).join('\n')+'\n```':'(no edit)';
 const md=['**'+D.label+'**, '+D.old+' → '+D.new+': '+name+' (step '+(r.old?r.old.step:'—')+' / '+
  (r.new?r.new.step:'—')+') — '+$('verdict').textContent,'',url,'',D.old+"'s edit:",block(r.old),'',
  D.new+"'s edit:",block(r.new)].join('\n');
 const box=$('finding');box.hidden=false;box.value=md;box.select();
 if(navigator.clipboard)navigator.clipboard.writeText(md).catch(()=>{});}
function sync(a,b){let busy=false;a.addEventListener('scroll',()=>{if(busy){busy=false;return;}
 const f=a.scrollTop/Math.max(1,a.scrollHeight-a.clientHeight);busy=true;
 b.scrollTop=f*(b.scrollHeight-b.clientHeight);});}
sync($('old-diff'),$('new-diff'));sync($('new-diff'),$('old-diff'));
function setWrap(){document.body.classList.toggle('nowrap',!opt.wrap);}
$('opt-wrap').addEventListener('change',e=>{opt.wrap=e.target.checked;setWrap();});
$('opt-ws').addEventListener('change',e=>{opt.ws=e.target.checked;show();frontend();});
$('opt-hide').addEventListener('change',e=>{opt.hide=e.target.checked;applyHide();});
$('copy').addEventListener('click',finding);
rows.forEach((tr,k)=>tr.addEventListener('click',()=>choose(k,false)));
document.addEventListener('keydown',e=>{
 if(e.target.tagName==='INPUT'||e.target.tagName==='TEXTAREA'||e.ctrlKey||e.metaKey||e.altKey)return;
 const go={ArrowDown:[1],j:[1],ArrowUp:[-1],k:[-1],n:[1,differs],p:[-1,differs],N:[-1,differs]}[e.key];
 if(!go)return;const k=step(cur,go[0],go[1]);if(k>=0)choose(k,true);e.preventDefault();});
setWrap();applyHide();frontend();
const first=fromHash();choose(first!==null?first:(visible(D.start)?D.start:Math.max(0,step(-1,1))),true);
