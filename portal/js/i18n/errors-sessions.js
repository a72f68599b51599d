// i18n/errors-sessions.js - the server's problems of server/problems/sessions.def (interactive
// sessions), by code: 'err.<code>': [the catalog's English text, 简体中文], the same
// {placeholders} (tests/portal/errors-check.js compares them with the catalog).
// session.not_found is identity.def's (one code, one text: errors-identity.js has it).
export default {
  'err.session.not_owner': ['only the session\'s owner may open it', '只有交互会话的所有者可以打开它'],
  'err.session.ended': ['the session has ended', '交互会话已结束'],
  'err.session.not_ready': ['the app does not answer yet', '应用尚未响应'],
  'err.session.app_unknown': ['app must be jupyter or web', '应用须为 jupyter 或 web'],
  'err.session.command_required': ['a web app needs a command that starts it', 'Web 应用需要一条启动它的命令'],
  'err.session.command_forbidden': ['a notebook\'s command is aidc\'s: leave command out',
    '笔记本的启动命令由 aidc 决定：请不要填写命令'],
  'err.session.extend_limit': ['a session may run {limit_minutes} minutes at most',
    '交互会话最多只能运行 {limit_minutes} 分钟'],
  'err.session.unsupported': ['cluster {cluster} cannot run sessions', '集群 {cluster} 不能运行交互会话'],
};
