// i18n/jobs.js - texts of the jobs pages: key -> [English, 简体中文] (merged into i18n.js's table).
export default {
};
