// Event types Unleash's admin API lists, one constant each.

package flagadmin

// Event types Unleash's admin API lists. The deprecated search accepts exactly these
// as its type; the query-string search accepts any type name.
const (
	// Feature and flag types.
	EventApplicationCreated                = "application-created"
	EventFeatureCreated                    = "feature-created"
	EventFeatureDeleted                    = "feature-deleted"
	EventFeatureUpdated                    = "feature-updated"
	EventFeatureMetadataUpdated            = "feature-metadata-updated"
	EventFeatureVariantsUpdated            = "feature-variants-updated"
	EventFeatureEnvironmentVariantsUpdated = "feature-environment-variants-updated"
	EventFeatureProjectChange              = "feature-project-change"
	EventFeatureArchived                   = "feature-archived"
	EventFeatureRevived                    = "feature-revived"
	EventFeatureImport                     = "feature-import"
	EventFeatureTagged                     = "feature-tagged"
	EventFeatureTagImport                  = "feature-tag-import"
	EventFeatureStrategyUpdate             = "feature-strategy-update"
	EventFeatureStrategyAdd                = "feature-strategy-add"
	EventFeatureStrategyRemove             = "feature-strategy-remove"
	EventFeatureTypeUpdated                = "feature-type-updated"
	EventFeatureCompleted                  = "feature-completed"
	EventFeatureUncompleted                = "feature-uncompleted"
	EventStrategyOrderChanged              = "strategy-order-changed"
	EventDropFeatureTags                   = "drop-feature-tags"
	EventFeatureUntagged                   = "feature-untagged"
	EventFeatureStaleOn                    = "feature-stale-on"
	EventFeatureStaleOff                   = "feature-stale-off"
	EventDropFeatures                      = "drop-features"
	EventFeatureEnvironmentEnabled         = "feature-environment-enabled"
	EventFeatureEnvironmentDisabled        = "feature-environment-disabled"
	EventFeaturePotentiallyStaleOn         = "feature-potentially-stale-on"
	EventFeatureFavorited                  = "feature-favorited"
	EventFeatureUnfavorited                = "feature-unfavorited"
	EventFeatureDependencyAdded            = "feature-dependency-added"
	EventFeatureDependencyRemoved          = "feature-dependency-removed"
	EventFeatureDependenciesRemoved        = "feature-dependencies-removed"
	EventFeaturesExported                  = "features-exported"
	EventFeaturesImported                  = "features-imported"

	// Strategy and context types.
	EventStrategyCreated        = "strategy-created"
	EventStrategyDeleted        = "strategy-deleted"
	EventStrategyDeprecated     = "strategy-deprecated"
	EventStrategyReactivated    = "strategy-reactivated"
	EventStrategyUpdated        = "strategy-updated"
	EventStrategyImport         = "strategy-import"
	EventDropStrategies         = "drop-strategies"
	EventDefaultStrategyUpdated = "default-strategy-updated"
	EventContextFieldCreated    = "context-field-created"
	EventContextFieldUpdated    = "context-field-updated"
	EventContextFieldDeleted    = "context-field-deleted"

	// Project and role types.
	EventProjectAccessAdded             = "project-access-added"
	EventProjectAccessUserRolesUpdated  = "project-access-user-roles-updated"
	EventProjectAccessGroupRolesUpdated = "project-access-group-roles-updated"
	EventProjectAccessUserRolesDeleted  = "project-access-user-roles-deleted"
	EventProjectAccessGroupRolesDeleted = "project-access-group-roles-deleted"
	EventProjectAccessUpdated           = "project-access-updated"
	EventProjectCreated                 = "project-created"
	EventProjectUpdated                 = "project-updated"
	EventProjectDeleted                 = "project-deleted"
	EventProjectArchived                = "project-archived"
	EventProjectRevived                 = "project-revived"
	EventProjectImport                  = "project-import"
	EventProjectUserAdded               = "project-user-added"
	EventProjectUserRemoved             = "project-user-removed"
	EventProjectUserRoleChanged         = "project-user-role-changed"
	EventProjectGroupRoleChanged        = "project-group-role-changed"
	EventProjectGroupAdded              = "project-group-added"
	EventProjectGroupRemoved            = "project-group-removed"
	EventDropProjects                   = "drop-projects"
	EventProjectFavorited               = "project-favorited"
	EventProjectUnfavorited             = "project-unfavorited"
	EventProjectEnvironmentAdded        = "project-environment-added"
	EventProjectEnvironmentRemoved      = "project-environment-removed"
	EventRoleCreated                    = "role-created"
	EventRoleUpdated                    = "role-updated"
	EventRoleDeleted                    = "role-deleted"

	// Tag types.
	EventTagCreated     = "tag-created"
	EventTagDeleted     = "tag-deleted"
	EventTagImport      = "tag-import"
	EventDropTags       = "drop-tags"
	EventTagTypeCreated = "tag-type-created"
	EventTagTypeDeleted = "tag-type-deleted"
	EventTagTypeUpdated = "tag-type-updated"
	EventTagTypeImport  = "tag-type-import"
	EventDropTagTypes   = "drop-tag-types"

	// Addon, database, user, environment, segment, group and setting types.
	EventAddonConfigCreated = "addon-config-created"
	EventAddonConfigUpdated = "addon-config-updated"
	EventAddonConfigDeleted = "addon-config-deleted"
	EventDBPoolUpdate       = "db-pool-update"
	EventUserCreated        = "user-created"
	EventUserUpdated        = "user-updated"
	EventUserDeleted        = "user-deleted"
	EventDropEnvironments   = "drop-environments"
	EventEnvironmentImport  = "environment-import"
	EventEnvironmentCreated = "environment-created"
	EventEnvironmentUpdated = "environment-updated"
	EventEnvironmentDeleted = "environment-deleted"
	EventSegmentCreated     = "segment-created"
	EventSegmentUpdated     = "segment-updated"
	EventSegmentDeleted     = "segment-deleted"
	EventSegmentImport      = "segment-import"
	EventGroupCreated       = "group-created"
	EventGroupUpdated       = "group-updated"
	EventGroupDeleted       = "group-deleted"
	EventGroupUserAdded     = "group-user-added"
	EventGroupUserRemoved   = "group-user-removed"
	EventSettingCreated     = "setting-created"
	EventSettingUpdated     = "setting-updated"
	EventSettingDeleted     = "setting-deleted"

	// Client, token and account types.
	EventClientMetrics              = "client-metrics"
	EventClientRegister             = "client-register"
	EventPATCreated                 = "pat-created"
	EventPATDeleted                 = "pat-deleted"
	EventPublicSignupTokenCreated   = "public-signup-token-created"
	EventPublicSignupTokenUserAdded = "public-signup-token-user-added"
	EventPublicSignupTokenUpdated   = "public-signup-token-updated"
	EventAPITokenCreated            = "api-token-created"
	EventAPITokenUpdated            = "api-token-updated"
	EventAPITokenDeleted            = "api-token-deleted"
	EventServiceAccountCreated      = "service-account-created"
	EventServiceAccountDeleted      = "service-account-deleted"
	EventServiceAccountUpdated      = "service-account-updated"

	// Change request types.
	EventChangeRequestCreated                     = "change-request-created"
	EventChangeRequestDiscarded                   = "change-request-discarded"
	EventChangeAdded                              = "change-added"
	EventChangeDiscarded                          = "change-discarded"
	EventChangeEdited                             = "change-edited"
	EventChangeRequestRejected                    = "change-request-rejected"
	EventChangeRequestApproved                    = "change-request-approved"
	EventChangeRequestApprovalAdded               = "change-request-approval-added"
	EventChangeRequestCancelled                   = "change-request-cancelled"
	EventChangeRequestSentToReview                = "change-request-sent-to-review"
	EventChangeRequestScheduleSuspended           = "change-request-schedule-suspended"
	EventChangeRequestApplied                     = "change-request-applied"
	EventChangeRequestScheduled                   = "change-request-scheduled"
	EventChangeRequestScheduledApplicationSuccess = "change-request-scheduled-application-success"
	EventChangeRequestScheduledApplicationFailure = "change-request-scheduled-application-failure"
	EventChangeRequestConfigurationUpdated        = "change-request-configuration-updated"

	// Banner, signal and action types.
	EventBannerCreated              = "banner-created"
	EventBannerUpdated              = "banner-updated"
	EventBannerDeleted              = "banner-deleted"
	EventSignalEndpointCreated      = "signal-endpoint-created"
	EventSignalEndpointUpdated      = "signal-endpoint-updated"
	EventSignalEndpointDeleted      = "signal-endpoint-deleted"
	EventSignalEndpointTokenCreated = "signal-endpoint-token-created"
	EventSignalEndpointTokenUpdated = "signal-endpoint-token-updated"
	EventSignalEndpointTokenDeleted = "signal-endpoint-token-deleted"
	EventActionsCreated             = "actions-created"
	EventActionsUpdated             = "actions-updated"
	EventActionsDeleted             = "actions-deleted"

	// flagadmin's own types: retention is in the log (flagadmin/vlog).
	// Their events are never pruned.
	EventRetentionChanged = "retention-changed"
	EventLogHoldAdded     = "log-hold-added"
	EventLogHoldReleased  = "log-hold-released"
	EventEventsPruned     = "events-pruned"
)

// eventTypes lists every known event type in the order Unleash's admin API
// lists them, then flagadmin's own.
var eventTypes = []string{
	EventApplicationCreated,
	EventFeatureCreated,
	EventFeatureDeleted,
	EventFeatureUpdated,
	EventFeatureMetadataUpdated,
	EventFeatureVariantsUpdated,
	EventFeatureEnvironmentVariantsUpdated,
	EventFeatureProjectChange,
	EventFeatureArchived,
	EventFeatureRevived,
	EventFeatureImport,
	EventFeatureTagged,
	EventFeatureTagImport,
	EventFeatureStrategyUpdate,
	EventFeatureStrategyAdd,
	EventFeatureStrategyRemove,
	EventFeatureTypeUpdated,
	EventFeatureCompleted,
	EventFeatureUncompleted,
	EventStrategyOrderChanged,
	EventDropFeatureTags,
	EventFeatureUntagged,
	EventFeatureStaleOn,
	EventFeatureStaleOff,
	EventDropFeatures,
	EventFeatureEnvironmentEnabled,
	EventFeatureEnvironmentDisabled,
	EventFeaturePotentiallyStaleOn,
	EventFeatureFavorited,
	EventFeatureUnfavorited,
	EventFeatureDependencyAdded,
	EventFeatureDependencyRemoved,
	EventFeatureDependenciesRemoved,
	EventFeaturesExported,
	EventFeaturesImported,
	EventStrategyCreated,
	EventStrategyDeleted,
	EventStrategyDeprecated,
	EventStrategyReactivated,
	EventStrategyUpdated,
	EventStrategyImport,
	EventDropStrategies,
	EventDefaultStrategyUpdated,
	EventContextFieldCreated,
	EventContextFieldUpdated,
	EventContextFieldDeleted,
	EventProjectAccessAdded,
	EventProjectAccessUserRolesUpdated,
	EventProjectAccessGroupRolesUpdated,
	EventProjectAccessUserRolesDeleted,
	EventProjectAccessGroupRolesDeleted,
	EventProjectAccessUpdated,
	EventProjectCreated,
	EventProjectUpdated,
	EventProjectDeleted,
	EventProjectArchived,
	EventProjectRevived,
	EventProjectImport,
	EventProjectUserAdded,
	EventProjectUserRemoved,
	EventProjectUserRoleChanged,
	EventProjectGroupRoleChanged,
	EventProjectGroupAdded,
	EventProjectGroupRemoved,
	EventDropProjects,
	EventProjectFavorited,
	EventProjectUnfavorited,
	EventProjectEnvironmentAdded,
	EventProjectEnvironmentRemoved,
	EventRoleCreated,
	EventRoleUpdated,
	EventRoleDeleted,
	EventTagCreated,
	EventTagDeleted,
	EventTagImport,
	EventDropTags,
	EventTagTypeCreated,
	EventTagTypeDeleted,
	EventTagTypeUpdated,
	EventTagTypeImport,
	EventDropTagTypes,
	EventAddonConfigCreated,
	EventAddonConfigUpdated,
	EventAddonConfigDeleted,
	EventDBPoolUpdate,
	EventUserCreated,
	EventUserUpdated,
	EventUserDeleted,
	EventDropEnvironments,
	EventEnvironmentImport,
	EventEnvironmentCreated,
	EventEnvironmentUpdated,
	EventEnvironmentDeleted,
	EventSegmentCreated,
	EventSegmentUpdated,
	EventSegmentDeleted,
	EventSegmentImport,
	EventGroupCreated,
	EventGroupUpdated,
	EventGroupDeleted,
	EventGroupUserAdded,
	EventGroupUserRemoved,
	EventSettingCreated,
	EventSettingUpdated,
	EventSettingDeleted,
	EventClientMetrics,
	EventClientRegister,
	EventPATCreated,
	EventPATDeleted,
	EventPublicSignupTokenCreated,
	EventPublicSignupTokenUserAdded,
	EventPublicSignupTokenUpdated,
	EventAPITokenCreated,
	EventAPITokenUpdated,
	EventAPITokenDeleted,
	EventServiceAccountCreated,
	EventServiceAccountDeleted,
	EventServiceAccountUpdated,
	EventChangeRequestCreated,
	EventChangeRequestDiscarded,
	EventChangeAdded,
	EventChangeDiscarded,
	EventChangeEdited,
	EventChangeRequestRejected,
	EventChangeRequestApproved,
	EventChangeRequestApprovalAdded,
	EventChangeRequestCancelled,
	EventChangeRequestSentToReview,
	EventChangeRequestScheduleSuspended,
	EventChangeRequestApplied,
	EventChangeRequestScheduled,
	EventChangeRequestScheduledApplicationSuccess,
	EventChangeRequestScheduledApplicationFailure,
	EventChangeRequestConfigurationUpdated,
	EventBannerCreated,
	EventBannerUpdated,
	EventBannerDeleted,
	EventSignalEndpointCreated,
	EventSignalEndpointUpdated,
	EventSignalEndpointDeleted,
	EventSignalEndpointTokenCreated,
	EventSignalEndpointTokenUpdated,
	EventSignalEndpointTokenDeleted,
	EventActionsCreated,
	EventActionsUpdated,
	EventActionsDeleted,
	EventRetentionChanged,
	EventLogHoldAdded,
	EventLogHoldReleased,
	EventEventsPruned,
}
