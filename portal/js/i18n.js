// i18n.js - every text of the portal, in one table: key -> [English, 简体中文].
// Pages call t('key', {var}) and mark static markup with data-i18n; the
// language defaults to the browser's, a choice is remembered per browser.
// tests/portal/i18n-check.js fails on a key used but missing or half translated.
// The table is kept in areas (i18n/*.js, one per group of pages, so translators
// and page authors work on one file each); they are merged here into one table.
import jobs from './i18n/jobs.js';
import self from './i18n/self.js';
import admin from './i18n/admin.js';
import finaudit from './i18n/finaudit.js';
import files from './i18n/files.js';
import sessions from './i18n/sessions.js';
import allocations from './i18n/allocations.js';
import efficiency from './i18n/efficiency.js';
// the server's problems by code (server/problems/*.def), one file per area
import errCore from './i18n/errors-core.js';
import errJobs from './i18n/errors-jobs.js';
import errImages from './i18n/errors-images.js';
import errBilling from './i18n/errors-billing.js';
import errIdentity from './i18n/errors-identity.js';
import errFiles from './i18n/errors-files.js';
import errSessions from './i18n/errors-sessions.js';
import errSso from './i18n/errors-sso.js';
import errAllocations from './i18n/errors-allocations.js';
// job templates (docs/templates.md)
import templates from './i18n/templates.js';
import errTemplates from './i18n/errors-templates.js';
import errJobArrays from './i18n/errors-jobarrays.js';
import notify from './i18n/notify.js';
import errNotify from './i18n/errors-notify.js';

const TABLE = {
  // shell
  'app.skip': ['Skip to content', '跳到正文'],
  'app.menu': ['Menu', '菜单'],
  'app.tenant': ['Tenant', '租户'],
  'app.logout': ['Sign out', '退出登录'],
  'app.api': ['REST API (OpenAPI)', 'REST API（OpenAPI）'],
  'app.loading': ['Loading…', '加载中…'],
  'app.not_found': ['This page does not exist.', '页面不存在。'],
  'app.forbidden': ['Your roles do not allow this page.', '您的角色无权访问此页面。'],
  'app.error': ['Something went wrong: {msg}', '出错了：{msg}'],
  'app.no_tenant': ['You are not a member of any tenant yet. Ask a tenant admin to add you.',
    '您还不是任何租户的成员，请联系租户管理员添加。'],
  'app.session_ended': ['Your session has ended. Please sign in again.', '会话已结束，请重新登录。'],
  'app.saved': ['Saved', '已保存'],
  'app.refresh': ['Refresh', '刷新'],
  'app.retry': ['Try again', '重试'],
  'app.logout_failed': ['Signing out failed ({msg}); you are still signed in. Try again.',
    '退出登录失败（{msg}），您仍处于登录状态，请重试。'],
  'app.more': ['Load more', '加载更多'],
  'app.none': ['Nothing here yet.', '暂无内容。'],
  'app.cancel': ['Cancel', '取消'],
  'app.confirm': ['Confirm', '确认'],
  'app.close': ['Close', '关闭'],
  'app.copy': ['Copy', '复制'],
  'app.copied': ['Copied', '已复制'],
  'app.download_csv': ['Download CSV', '下载 CSV'],
  'app.yes': ['yes', '是'],
  'app.no': ['no', '否'],
  'app.actions': ['Actions', '操作'],
  'app.bytes': ['{n} B', '{n} 字节'],
  'app.form_errors': ['Please correct the marked fields.', '请修正标出的字段。'],
  'app.throttled': ['Too many requests; try again in {s} s.', '请求过于频繁，请 {s} 秒后再试。'],
  'app.approval_pending': ['Sent for approval: another platform admin must approve it.',
    '已提交审批：需另一位平台管理员批准。'],
  // navigation
  'nav.dashboard': ['Dashboard', '总览'],
  'nav.jobs': ['Jobs', '作业'],
  'nav.sessions': ['Sessions', '交互会话'],
  'nav.files': ['Files', '文件'],
  'nav.images': ['Images', '镜像'],
  'nav.usage': ['Usage', '用量'],
  'nav.tenant': ['Tenant admin', '租户管理'],
  'nav.platform': ['Platform admin', '平台管理'],
  'nav.finance': ['Finance', '财务'],
  'nav.audit': ['Audit', '审计'],
  'nav.tokens': ['API tokens', 'API 令牌'],
  // login
  'login.title': ['Sign in', '登录'],
  'login.username': ['User name', '用户名'],
  'login.password': ['Password', '密码'],
  'login.submit': ['Sign in', '登录'],
  'login.bad': ['Wrong user name or password.', '用户名或密码错误。'],
  'login.throttled': ['Too many failed attempts. Wait {s} seconds and try again.',
    '失败次数过多，请等待 {s} 秒后再试。'],
  'login.failed': ['Sign-in failed: {msg}', '登录失败：{msg}'],
  'login.lead': ['Self-service GPU computing for your tenant.', '面向租户的自助式 GPU 算力平台。'],
  'login.sso': ['Sign in with {name}', '使用 {name} 登录'],
  'login.sso_group': ['Single sign-on', '统一身份认证'],
  'login.or': ['or with a user name and password', '或使用用户名和密码'],
  'login.account': ['Account', '账号类型'],
  'login.local': ['aidc account (administrators)', 'aidc 本地账号（管理员）'],
  'login.signed_out': ['You are signed out of aidc.', '您已退出 aidc。'],
  'login.sso_logout': ['Also sign out of {name}', '同时退出 {name}'],
  // job states
  'state.queued': ['queued', '排队中'],
  'state.admitted': ['admitted', '已准入'],
  'state.pending': ['pending', '等待调度'],
  'state.running': ['running', '运行中'],
  'state.succeeded': ['succeeded', '已成功'],
  'state.failed': ['failed', '已失败'],
  'state.cancelled': ['cancelled', '已取消'],
  'state.preempted': ['preempted', '被抢占'],
  // dashboard
  'dash.title': ['Dashboard', '总览'],
  'dash.quota': ['Quota per GPU type', '各 GPU 类型配额'],
  'dash.used': ['used', '已用'],
  'dash.guaranteed': ['guaranteed', '保障'],
  'dash.limit': ['limit', '上限'],
  'dash.borrowed': ['borrowed', '借用'],
  'dash.quota_line': ['{used} used of {guaranteed} guaranteed, limit {limit}; {borrowed} borrowed',
    '已用 {used}，保障 {guaranteed}，上限 {limit}；借用 {borrowed}'],
  'dash.no_quota': ['Your tenant has no GPU quota yet.', '您的租户尚无 GPU 配额。'],
  'dash.my_jobs': ['My running and queued jobs', '我的运行中与排队作业'],
  'dash.no_jobs': ['No running or queued jobs.', '没有运行中或排队的作业。'],
  'dash.month': ['This month', '本月'],
  'dash.gpu_hours': ['GPU-hours', 'GPU 小时'],
  'dash.budget': ['Budget', '预算'],
  'dash.budget_line': ['{used} of {limit} GPU-hours', '{used} / {limit} GPU 小时'],
  'dash.no_budget': ['no monthly GPU-hour budget', '无月度 GPU 小时预算'],
  'dash.submit': ['Submit a job', '提交作业'],
  // common job columns (shared by pages)
  'job.name': ['Name', '名称'],
  'job.state': ['State', '状态'],
  'job.project': ['Project', '项目'],
  'job.user': ['User', '用户'],
  'job.gpus': ['GPUs', 'GPU'],
  'job.submitted': ['Submitted', '提交时间'],
  'job.reason': ['Reason', '原因'],
};

for (const area of [jobs, self, admin, finaudit, files, sessions, allocations, efficiency,
  errCore, errJobs, errImages, errBilling, errIdentity, errFiles, errSessions, errSso,
  errAllocations,
  templates, errTemplates, errJobArrays, notify, errNotify])
  for (const [key, row] of Object.entries(area)) {
    if (key in TABLE) throw new Error(`i18n key ${key} defined twice`);
    TABLE[key] = row;
  }

const LANGS = ['en', 'zh-CN'];
const STORE = 'aidc.lang';
let current = pick();

function pick() {
  const saved = localStorage.getItem(STORE);
  if (LANGS.includes(saved)) return saved;
  const nav = (navigator.languages && navigator.languages[0]) || navigator.language || 'en';
  return nav.toLowerCase().startsWith('zh') ? 'zh-CN' : 'en';
}

export function lang() { return current; }
export function keys() { return Object.keys(TABLE); }
export function has(key) { return key in TABLE; }
export function table() { return TABLE; }

export function t(key, vars) {
  const row = TABLE[key];
  let s = row ? (row[current === 'zh-CN' ? 1 : 0] || row[0]) : key;
  if (vars)
    s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  return s;
}

// A server problem's text in the reader's language: its code's entry filled
// with its params (a job state among them translated too), or the server's
// English (english) where the portal does not know the code.
export function problemText(code, params, english) {
  const key = `err.${code}`;
  if (!code || !(key in TABLE)) return english;
  const vars = { ...(params || {}) };
  if (typeof vars.state === 'string' && `state.${vars.state}` in TABLE) vars.state = t(`state.${vars.state}`);
  return t(key, vars);
}

// Fill every [data-i18n] (text) and [data-i18n-label] (aria-label) below root.
export function apply(root = document) {
  document.documentElement.lang = current;
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll('[data-i18n-label]'))
    el.setAttribute('aria-label', t(el.dataset.i18nLabel));
}

export function setLang(next) {
  current = LANGS.includes(next) ? next : 'en';
  localStorage.setItem(STORE, current);
  apply();
}

export function toggle() { setLang(current === 'en' ? 'zh-CN' : 'en'); }

// Locale-aware formats; times in the browser's zone with the zone shown.
export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString(current, {
    year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false, timeZoneName: 'short',
  });
}

export function fmtNum(n, digits = 2) {
  if (n === null || n === undefined || n === '') return '—';
  const x = Number(n);
  return isNaN(x) ? String(n) : x.toLocaleString(current, { maximumFractionDigits: digits });
}

// A size in bytes for people: "512 B", "1.5 KiB", "20 MiB" (binary units, as df -h)
export function fmtBytes(n) {
  if (n === null || n === undefined || n === '') return '—';
  const x = Number(n);
  if (isNaN(x)) return String(n);
  if (Math.abs(x) < 1024) return t('app.bytes', { n: fmtNum(x, 0) });
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = x / 1024;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${fmtNum(v, Math.abs(v) < 10 ? 1 : 0)} ${units[i]}`;
}
