// i18n/errors-notify.js - the server's problems of server/problems/notify.def
// (notification preferences), by code: 'err.<code>': [the catalog's English text,
// 简体中文], the same {placeholders} (tests/portal/errors-check.js compares them).
export default {
  'err.notify.event': ['"{event}" is no notification event (one of: {allowed})',
    '“{event}”不是通知事件（可选：{allowed}）'],
  'err.notify.duplicate': ['"{value}" is given twice', '“{value}”重复出现'],
  'err.notify.too_many': ['at most {max} items', '最多 {max} 项'],
  'err.notify.project': ['"{project}" is no project name', '“{project}”不是项目名'],
  'err.notify.url': ['the webhook URL {reason}', 'Webhook 地址无效：{reason}'],
  'err.notify.secret': ['a webhook secret is {min} to {max} printable ASCII characters',
    'Webhook 密钥须为 {min} 到 {max} 个可打印 ASCII 字符'],
  'err.notify.secret_required': ['webhook {url} is new: give its secret', 'Webhook {url} 是新的：请填写其密钥'],
  'err.notify.token_bound': ["a token bound to a tenant cannot see or change its user's notifications",
    '绑定到租户的令牌不能查看或更改其用户的通知设置'],
};
