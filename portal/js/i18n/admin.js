// i18n/admin.js - texts of the admin pages: key -> [English, 简体中文] (merged into i18n.js's table).
export default {
};
