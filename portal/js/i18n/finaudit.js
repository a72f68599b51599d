// i18n/finaudit.js - texts of the finaudit pages: key -> [English, 简体中文] (merged into i18n.js's table).
export default {
};
