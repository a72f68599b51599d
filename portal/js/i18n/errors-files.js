// i18n/errors-files.js - the server's problems of server/problems/files.def, by code:
// 'err.<code>': [the catalog's English text, 简体中文], the same {placeholders}
// (tests/portal/errors-check.js compares them with the catalog).
export default {
  // which space, which path
  'err.files.space_kind': ['a space is projects/<project>, home/<user> or datasets/<name>',
    '存储空间须为 projects/<项目>、home/<用户> 或 datasets/<名称>'],
  'err.files.space_not_found': ['there is no storage space {space} in tenant "{tenant}"',
    '租户“{tenant}”中没有存储空间 {space}'],
  'err.files.path': ['is not a path inside a space: names of 1 to 255 bytes of UTF-8 without control characters, neither . nor .., separated by single slashes, 4096 bytes at most',
    '不是存储空间内的路径：各级名称须为 1 到 255 字节的 UTF-8 文本，不含控制字符，不能是 . 或 ..，以单个斜杠分隔，总长最多 4096 字节'],
  'err.files.not_found': ['"{path}" does not exist in {space}', '{space} 中不存在“{path}”'],
  'err.files.not_a_directory': ['a part of "{path}" in {space} is a file, not a directory',
    '{space} 中“{path}”的某一级是文件，而不是目录'],
  'err.files.special': ['"{path}" in {space} is a link or a special file (FIFO, socket, device): the files API neither follows nor opens those',
    '{space} 中的“{path}”是链接或特殊文件（FIFO、套接字、设备）：文件接口既不跟随也不打开这类文件'],
  'err.files.is_directory': ['"{path}" in {space} is a directory', '{space} 中的“{path}”是一个目录'],
  'err.files.exists': ['"{path}" exists already in {space}', '{space} 中已存在“{path}”'],
  'err.files.not_empty': ['directory "{path}" in {space} is not empty: add ?recursive=true to remove it with everything in it',
    '{space} 中的目录“{path}”不是空的：加上 ?recursive=true 可将其连同其中所有内容一并删除'],
  'err.files.space_root': ['the root of {space} cannot be removed or moved', '{space} 的根目录不能删除或移动'],
  'err.files.move_into_itself': ['a directory cannot move into itself', '目录不能移动到它自身之中'],
  // who may
  'err.files.home_not_own': ['members use their own home only; home/{user} is not yours',
    '成员只能使用自己的主目录；home/{user} 不是您的'],
  'err.files.dataset_read_only': ['datasets are read-only to members; a tenant admin changes them',
    '数据集对成员只读；由租户管理员修改'],
  'err.files.viewer': ['viewers do not use the tenant\'s files; members and tenant admins do',
    '查看者不能使用租户的文件；成员和租户管理员可以'],
  // downloads
  'err.files.range': ['the range {range} lies outside the file\'s {size} bytes', '范围 {range} 超出了文件的 {size} 字节'],
  // uploads
  'err.files.content_range': ['Content-Range must be "bytes first-last/total" with first <= last < total',
    'Content-Range 须为“bytes first-last/total”，且 first <= last < total'],
  'err.files.upload_busy': ['another part of the upload of "{path}" is still arriving: try again once it ended',
    '“{path}”的上传还有一段正在传输：请在其结束后重试'],
  'err.files.upload_offset': ['the upload of "{path}" holds {have} bytes: continue from byte {have}',
    '“{path}”的上传已收到 {have} 字节：请从第 {have} 字节继续'],
  'err.files.upload_incomplete': ['the body held {got} bytes where {want} were announced; nothing was kept',
    '请求体只有 {got} 字节，而声明的是 {want} 字节；未保留任何内容'],
  'err.files.upload_too_large': ['a file may have at most {max} bytes', '单个文件最多 {max} 字节'],
  'err.files.quota_exceeded': ['the upload would take {space} past its storage limit of {limit_gib} GiB ({used_gib} GiB in use); nothing was kept',
    '此次上传将使 {space} 超出 {limit_gib} GiB 的存储上限（已使用 {used_gib} GiB）；未保留任何内容'],
  'err.files.disk_full': ['the storage is full; nothing was kept', '存储已满；未保留任何内容'],
  'err.files.storage_unavailable': ['the storage cannot be used now ({reason})', '存储当前不可用（{reason}）'],
  // a job's outputs
  'err.job.files_not_owner': ['only the job\'s owner and the tenant\'s admins read its outputs',
    '只有作业的所有者和租户管理员可以读取其输出文件'],
  'err.job.files_unavailable': ['the outputs of jobs on {kind} clusters are not kept where aidc can read them',
    '{kind} 集群上作业的输出文件不在 aidc 能读取的位置'],
};
