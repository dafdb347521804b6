/** JSON schemas of the request bodies (SOL003 v1 as Tacker's `openstack vnflcm` sends them). */

const keyValuePairs = { type: "object" };

/** A VIM's fields in `POST` and `PATCH /k8s-vnf/v1/vims`, but its id and Keystone URL (which a PATCH does not change). */
const nativeVimFields = {
    name: { type: "string", minLength: 1, maxLength: 255 },
    username: { type: "string", minLength: 1 },
    password: { type: "string", minLength: 1 },
    projectName: { type: "string", minLength: 1 },
    userDomainName: { type: "string" },
    projectDomainName: { type: "string" },
    region: { type: "string" },
} as const;

/** Tacker's `auth_cred` and `vim_project`, as python-tackerclient's `vim register` and `vim set` send them. */
const tackerAuthCred = {
    type: "object",
    properties: {
        bearer_token: { type: "string", minLength: 1 },
        ssl_ca_cert: { type: "string" },
        username: { type: "string" },
        password: { type: "string" },
        user_domain_name: { type: "string" },
        cert_verify: { enum: ["True", "False"] },
    },
    additionalProperties: false,
} as const;
const tackerVimProject = { type: "object", properties: { name: { type: "string" }, project_domain_name: { type: "string" } }, additionalProperties: false } as const;

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
    instantiateVnfRequest: {
        type: "object",
        required: ["flavourId"],
        properties: { flavourId: { type: "string", minLength: 1 }, instantiationLevelId: { type: "string" }, extVirtualLinks: { type: "array" }, vimConnectionInfo: { type: "array" }, additionalParams: { type: "object" } },
    },
    scaleVnfRequest: {
        type: "object",
        required: ["type", "aspectId"],
        properties: { type: { enum: ["SCALE_OUT", "SCALE_IN"] }, aspectId: { type: "string", minLength: 1 }, numberOfSteps: { anyOf: [{ type: "integer", minimum: 1 }, { type: "string", pattern: "^[1-9][0-9]{0,5}$" }] }, additionalParams: { type: "object" } },
        additionalProperties: false,
    },
    scaleVnfToLevelRequest: {
        type: "object",
        properties: {
            instantiationLevelId: { type: "string", minLength: 1 },
            scaleInfo: { type: "array", maxItems: 16, items: { type: "object", required: ["aspectId", "scaleLevel"], properties: { aspectId: { type: "string", minLength: 1 }, scaleLevel: { type: "integer", minimum: 0 } }, additionalProperties: false } },
            additionalParams: { type: "object" },
        },
        additionalProperties: false,
    },
    healVnfRequest: {
        type: "object",
        properties: { cause: { type: "string" }, vnfcInstanceId: { anyOf: [{ type: "array", items: { type: "string", minLength: 1 } }, { type: "string", minLength: 1 }] }, additionalParams: { type: "object" } },
        additionalProperties: false,
    },
    terminateVnfRequest: {
        type: "object",
        required: ["terminationType"],
        properties: { terminationType: { enum: ["FORCEFUL", "GRACEFUL"] }, gracefulTerminationTimeout: { type: "integer", minimum: 0, maximum: 86400 }, additionalParams: { type: "object" } },
        additionalProperties: false,
    },
    operateVnfRequest: {
        type: "object",
        required: ["changeStateTo"],
        properties: {
            changeStateTo: { enum: ["STARTED", "STOPPED"] },
            stopType: { enum: ["FORCEFUL", "GRACEFUL"] },
            gracefulStopTimeout: { type: "integer", minimum: 0, maximum: 86400 },
            additionalParams: { type: "object" },
        },
        additionalProperties: false,
    },
    changeExtVnfConnectivityRequest: {
        type: "object",
        required: ["extVirtualLinks"],
        properties: {
            extVirtualLinks: {
                type: "array",
                minItems: 1,
                maxItems: 64,
                items: {
                    type: "object",
                    required: ["id", "resourceId", "extCps"],
                    properties: {
                        id: { type: "string", minLength: 1 },
                        resourceId: { type: "string", minLength: 1, maxLength: 255 },
                        extCps: { type: "array", minItems: 1, maxItems: 64, items: { type: "object", required: ["cpdId"], properties: { cpdId: { type: "string", minLength: 1 }, cpConfig: { anyOf: [{ type: "array" }, { type: "object" }] } } } },
                    },
                },
            },
            vimConnectionInfo: { type: "array" },
            additionalParams: { type: "object" },
        },
        additionalProperties: false,
    },
    changeVnfFlavourRequest: {
        type: "object",
        required: ["newFlavourId"],
        properties: {
            newFlavourId: { type: "string", minLength: 1, maxLength: 255 },
            instantiationLevelId: { type: "string" },
            extVirtualLinks: { type: "array" },
            extManagedVirtualLinks: { type: "array" },
            vimConnectionInfo: { type: "array" },
            additionalParams: { type: "object" },
        },
        additionalProperties: false,
    },
    cancelMode: {
        type: "object",
        properties: { cancelMode: { enum: ["GRACEFUL", "FORCEFUL"] } },
        additionalProperties: false,
    },
    vimRegistration: {
        type: "object",
        required: ["name", "authUrl", "username", "password", "projectName"],
        properties: {
            id: { type: "string", pattern: "^[0-9a-fA-F-]{36}$" },
            authUrl: { type: "string", pattern: "^https?://[^\\s]+$" },
            ...nativeVimFields,
        },
        additionalProperties: false,
    },
    /** `PATCH /k8s-vnf/v1/vims/{id}`: what changes (a merge patch); the Keystone URL and the id do not. */
    vimUpdate: {
        type: "object",
        minProperties: 1,
        properties: {
            ...nativeVimFields,
        },
        additionalProperties: false,
    },
    /** Tacker's NFVO `PUT /v1.0/vims/{id}`, as python-tackerclient's `vim set` sends it (Tacker: auth_url and type read-only). */
    tackerVimUpdate: {
        type: "object",
        required: ["vim"],
        properties: {
            vim: {
                type: "object",
                properties: {
                    name: { type: "string", minLength: 1, maxLength: 255 },
                    description: { type: "string", maxLength: 1024 },
                    is_default: { type: "boolean" },
                    auth_cred: tackerAuthCred,
                    vim_project: tackerVimProject,
                },
                additionalProperties: false,
            },
        },
        additionalProperties: false,
    },
    /** Tacker's NFVO `POST /v1.0/vims`, as python-tackerclient's `vim register` sends it. */
    tackerVimRegistration: {
        type: "object",
        required: ["vim"],
        properties: {
            vim: {
                type: "object",
                required: ["name", "auth_url", "auth_cred"],
                properties: {
                    name: { type: "string", minLength: 1, maxLength: 255 },
                    type: { enum: ["openstack", "kubernetes"] },
                    auth_url: { type: "string", minLength: 1, maxLength: 2048 },
                    auth_cred: tackerAuthCred,
                    vim_project: tackerVimProject,
                    description: { type: "string", maxLength: 1024 },
                    is_default: { type: "boolean" },
                },
                additionalProperties: false,
            },
        },
        additionalProperties: false,
    },
} as const;
