/** JSON schemas of the request bodies (SOL003 v1 as Tacker's `openstack vnflcm` sends them). */

const links = { type: "object" };
const keyValuePairs = { type: "object" };

export const SCHEMAS = {
    createVnfInstance: {
        type: "object",
        required: ["vnfdId"],
        properties: {
            vnfdId: { type: "string", minLength: 1, maxLength: 255 },
            vnfInstanceName: { type: "string", maxLength: 255 },
            vnfInstanceDescription: { type: "string", maxLength: 1024 },
            metadata: keyValuePairs,
        },
        additionalProperties: false,
    },
    modifyVnfInstance: {
        type: "object",
        properties: {
            vnfInstanceName: { type: "string", maxLength: 255 },
            vnfInstanceDescription: { type: "string", maxLength: 1024 },
            metadata: keyValuePairs,
            vimConnectionInfo: { type: "array", items: { type: "object", required: ["id", "vimType"], properties: { id: { type: "string" }, vimId: { type: "string" }, vimType: { type: "string" } } } },
            vnfdId: { type: "string" },
            vnfConfigurableProperties: keyValuePairs,
            extensions: keyValuePairs,
        },
        additionalProperties: false,
    },
    subscriptionRequest: {
        type: "object",
        required: ["callbackUri"],
        properties: {
            callbackUri: { type: "string", pattern: "^https?://[^\\s]+$", maxLength: 2048 },
            filter: {
                type: "object",
                properties: {
                    vnfInstanceSubscriptionFilter: { type: "object", properties: { vnfInstanceIds: { type: "array", items: { type: "string" } } } },
                    notificationTypes: {
                        type: "array",
                        items: { enum: ["VnfLcmOperationOccurrenceNotification", "VnfIdentifierCreationNotification", "VnfIdentifierDeletionNotification"] },
                    },
                    operationTypes: { type: "array", items: { enum: ["INSTANTIATE", "SCALE", "SCALE_TO_LEVEL", "CHANGE_FLAVOUR", "TERMINATE", "HEAL", "OPERATE", "CHANGE_EXT_CONN", "MODIFY_INFO"] } },
                    operationStates: { type: "array", items: { enum: ["STARTING", "PROCESSING", "COMPLETED", "FAILED_TEMP", "FAILED", "ROLLING_BACK", "ROLLED_BACK"] } },
                },
            },
            authentication: {
                type: "object",
                required: ["authType"],
                properties: {
                    authType: { type: "array", items: { enum: ["BASIC", "OAUTH2_CLIENT_CREDENTIALS", "TLS_CERT"] } },
                    paramsBasic: { type: "object", properties: { userName: { type: "string" }, password: { type: "string" } } },
                },
            },
            verbosity: { enum: ["FULL", "SHORT"] },
        },
        additionalProperties: false,
    },
    links,
} as const;
