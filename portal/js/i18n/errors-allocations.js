// i18n/errors-allocations.js - the server's problems of server/problems/allocations.def
// (allocation requests and a project's PI), by code: 'err.<code>': [the catalog's English
// text, 简体中文], the same {placeholders} (tests/portal/errors-check.js compares them).
export default {
  'err.allocation.not_found': ['there is no allocation request {id}', '没有资源申请 {id}'],
  'err.allocation.not_pi': ['only a tenant admin or the PI of project "{project}" asks for its allocations',
    '只有租户管理员或项目“{project}”的负责人（PI）可以为其申请资源'],
  'err.allocation.date': ['must be a date, YYYY-MM-DD', '须为日期，格式 YYYY-MM-DD'],
  'err.allocation.ends_before_start': ['must be after starts_on', '须晚于开始日期'],
  'err.allocation.period_too_long': ['a period is {max_days} days at most', '期限最长 {max_days} 天'],
  'err.allocation.ends_in_past': ['must not be in the past', '不能早于今天'],
  'err.allocation.nothing_asked': ['ask for resources, gpu_hours or storage_gib',
    '请申请资源、GPU 小时数或存储容量（GiB）'],
  'err.allocation.renews_other': ['must be an earlier request of project "{project}"',
    '须为项目“{project}”此前的申请'],
  'err.allocation.decided': ['the request is {state} already', '该申请已处于 {state} 状态'],
  'err.allocation.not_commenter': ['only the requester, the tenant\'s admins and platform admins comment on a request',
    '只有申请人、租户管理员和平台管理员可以评论申请'],
  'err.allocation.needs_info_admin': ['only platform admins ask for more information',
    '只有平台管理员可以要求补充信息'],
  'err.allocation.report_window': ['must not be before from', '不能早于起始日期'],
  'err.project.pi_not_member': ['user "{username}" is not a member of tenant "{tenant}"',
    '用户“{username}”不是租户“{tenant}”的成员'],
};
