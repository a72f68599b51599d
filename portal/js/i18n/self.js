// i18n/self.js - texts of the self pages: key -> [English, 简体中文] (merged into i18n.js's table).
export default {
};
