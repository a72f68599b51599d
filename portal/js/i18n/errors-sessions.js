// i18n/errors-sessions.js - the server's problems of server/problems/sessions.def (interactive
// sessions and their relay), by code: 'err.<code>': [the catalog's English text, 简体中文],
// the same {placeholders} (tests/portal/errors-check.js compares them with the catalog).
export default {
  // the API
  'err.app_session.not_found': ['there is no session {id} in tenant "{tenant}"',
    '租户“{tenant}”中没有交互会话 {id}'],
  'err.app_session.not_owner': ['only the session\'s owner opens it', '只有交互会话的所有者可以打开它'],
  'err.app_session.ended': ['the session has ended', '交互会话已结束'],
  'err.app_session.app_unknown': ['must be "jupyter" or "web"', '须为“jupyter”或“web”'],
  'err.app_session.command_required': ['a web app needs the command that starts it (listening on $PORT)',
    'Web 应用需要一条启动它的命令（监听 $PORT）'],
  'err.app_session.command_forbidden': ['a notebook\'s command is aidc\'s: leave it out',
    'Notebook 的启动命令由 aidc 提供：请不要填写'],
  'err.app_session.extend_limit': ['a session runs {limit_minutes} minutes at most; it has {minutes} already',
    '交互会话最长运行 {limit_minutes} 分钟；它已有 {minutes} 分钟'],
  'err.app_session.extend_tenant_hours': ['until its new end the session would hold {requested} GPU-hours: more than tenant "{tenant}"\'s gpu_hours_month quota leaves ({used} of {limit} used this month)',
    '延长后到结束时会话将占用 {requested} GPU 小时，超出租户“{tenant}”的 gpu_hours_month 配额剩余（本月已用 {used}，上限 {limit}）'],
  'err.app_session.extend_project_hours': ['until its new end the session would hold {requested} GPU-hours: more than project "{project}"\'s gpu_hours_month quota leaves ({used} of {limit} used this month)',
    '延长后到结束时会话将占用 {requested} GPU 小时，超出项目“{project}”的 gpu_hours_month 配额剩余（本月已用 {used}，上限 {limit}）'],
  'err.app_session.unsupported': ['cluster "{cluster}" cannot run sessions', '集群“{cluster}”不能运行交互会话'],
  'err.app_session.relay_off': ['this aidc serves no sessions (AIDC_SESSIONS_LISTEN is off)',
    '此 aidc 不提供交互会话（AIDC_SESSIONS_LISTEN 为 off）'],
  // the relay
  'err.app_session.link_invalid': ['this link has been used or has expired: open the session again from the portal',
    '此链接已使用或已过期：请从门户重新打开交互会话'],
  'err.app_session.no_entry': ['open the session from the portal first', '请先从门户打开交互会话'],
  'err.app_session.other': ['this browser\'s entry is for another session', '此浏览器的进入凭据属于另一个交互会话'],
  'err.app_session.origin': ['a request from another origin does not reach the app', '来自其他源的请求不会转发给应用'],
  'err.app_session.not_ready': ['the app does not answer yet', '应用尚未响应'],
  'err.app_session.unreachable': ['the app does not answer', '应用没有响应'],
  'err.app_session.body_too_large': ['the relay passes bodies of {max} bytes at most',
    '转发的请求体最多 {max} 字节'],
};
