// i18n/errors-jobarrays.js - the server's problems of server/problems/jobarrays.def (job
// arrays and dependencies), by code: 'err.<code>': [the catalog's English text, 简体中文],
// the same {placeholders} (tests/portal/errors-check.js compares them with the catalog).
export default {
  'err.job.array_shape': ['must be an object with an integer "count" and, optionally, "max_parallel"',
    '须为对象：整数“count”，可选“max_parallel”'],
  'err.job.array_count': ['an array has 1 to {max} tasks', '作业数组须有 1 到 {max} 个任务'],
  'err.job.array_max_parallel': ['must be 1 to the array\'s count ({count})',
    '须为 1 到数组的任务数（{count}）'],
  'err.job.array_tenant_open': ['tenant "{tenant}" has {open} array tasks not ended; with {count} more it would pass its limit of {max}',
    '租户“{tenant}”有 {open} 个未结束的数组任务；再加 {count} 个将超过上限 {max}'],
  'err.job.array_task_waits': ['task {id} waits in its array\'s job on the cluster: cancel the array, or the task once it has started',
    '任务 {id} 正随其数组作业在集群中等待：请取消整个数组，或待该任务开始后再取消'],
  'err.job.array_session': ['an interactive session is one job: no arrays or dependencies',
    '交互式会话是单个作业：不能使用数组或依赖'],
  'err.job.depends_on_shape': ['must be a list of objects with a job id "job" and a "condition"',
    '须为对象列表，每项含作业 ID“job”和“condition”'],
  'err.job.depends_on_too_many': ['may name at most {max} jobs', '最多可依赖 {max} 个作业'],
  'err.job.depends_on_condition': ['must be "succeeded", "failed" or "ended"',
    '须为“succeeded”“failed”或“ended”'],
  'err.job.depends_on_duplicate': ['names job {id} a second time', '重复指定了作业 {id}'],
  'err.job.depends_on_unknown': ['job {id} not found in tenant "{tenant}"',
    '租户“{tenant}”中找不到作业 {id}'],
};
