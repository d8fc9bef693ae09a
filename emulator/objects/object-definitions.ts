// Custom-object definitions of the emulated account (spec: Custom object definition and record):
// text, select and relation fields, a pipeline with transitions, a child object, auto display ids,
// a relation restricted to business clients, and a disabled object (omitted from discovery but
// readable and writable). Also the `client` schema, the way to learn client custom-field ids.
import { CLIENT_STAGES } from '../data/account-config.js'

export interface FieldDef {
  name: string
  id: string
  label: string
  type: 'text' | 'select' | 'relation'
  required: boolean
  readOnly: boolean
  system: boolean
  options: { value: string; label: string }[] | null
  relation: { targetObject: string; relationshipType: 'MANY_TO_ONE'; multi: boolean } | null
  /** Not exposed by the schema route (spec: "the business-versus-individual client restriction is not exposed"). */
  restrictTo?: 'business' | 'individual'
}

export interface Stage {
  value: string
  label: string
  order: number
  isFinal: boolean
}

export interface ObjectDef {
  slug: string
  nameSingular: string
  namePlural: string
  isChildObject: boolean
  parentObjectSlug: string | null
  enabled: boolean
  /** Prefix of the auto display id (`customId`), when the object has one. */
  displayIdPrefix: string | null
  /** The data field used as the record's display name in `<base>Name` mirrors. */
  displayField: string
  fields: FieldDef[]
  pipeline: { name: string; fieldName: string; stages: Stage[]; transitions: Record<string, string[]> }
}

const opts = (...values: string[]): { value: string; label: string }[] =>
  values.map((value) => ({ value, label: value.replace(/_/g, ' ').replace(/^\w/, (c) => c.toUpperCase()) }))

const field = (name: string, id: string, label: string, type: FieldDef['type'], extra: Partial<FieldDef> = {}): FieldDef => ({
  name,
  id,
  label,
  type,
  required: false,
  readOnly: false,
  system: false,
  options: null,
  relation: null,
  ...extra,
})

const stages = (...values: [string, boolean][]): Stage[] =>
  values.map(([value, isFinal], i) => ({
    value,
    label: value.replace(/_/g, ' ').replace(/^\w/, (c) => c.toUpperCase()),
    order: i + 1,
    isFinal,
  }))

const statusField = (id: string, values: Stage[]): FieldDef =>
  field('status', id, 'Status', 'select', { system: true, options: values.map((s) => ({ value: s.value, label: s.label })) })

const EQUIPMENT_STAGES = stages(['active', false], ['maintenance', false], ['retired', true])
const INSPECTION_STAGES = stages(['scheduled', false], ['in_progress', false], ['passed', true], ['failed', true])
const ASSET_STAGES = stages(['open', false], ['closed', true])

export function objectDefinitions(): ObjectDef[] {
  return [
    {
      slug: 'equipment',
      nameSingular: 'Equipment',
      namePlural: 'Equipment',
      isChildObject: false,
      parentObjectSlug: null,
      enabled: true,
      displayIdPrefix: 'EQ',
      displayField: 'name',
      fields: [
        field('name', '66a000000000000000000101', 'Name', 'text', { required: true }),
        field('serialNumber', '66a000000000000000000102', 'Serial number', 'text'),
        field('category', '66a000000000000000000103', 'Category', 'select', {
          options: opts('hvac', 'plumbing', 'electrical', 'appliance'),
        }),
        field('ownerId', '66a000000000000000000104', 'Owner', 'relation', {
          relation: { targetObject: 'client', relationshipType: 'MANY_TO_ONE', multi: false },
          restrictTo: 'business',
        }),
        field('location', '66a000000000000000000105', 'Location', 'text'),
        statusField('66a000000000000000000106', EQUIPMENT_STAGES),
      ],
      pipeline: {
        name: 'Equipment lifecycle',
        fieldName: 'status',
        stages: EQUIPMENT_STAGES,
        transitions: { active: ['maintenance', 'retired'], maintenance: ['active', 'retired'], retired: [] },
      },
    },
    {
      slug: 'inspections',
      nameSingular: 'Inspection',
      namePlural: 'Inspections',
      isChildObject: true,
      parentObjectSlug: 'equipment',
      enabled: true,
      displayIdPrefix: null,
      displayField: 'title',
      fields: [
        field('title', '66a000000000000000000201', 'Title', 'text', { required: true }),
        field('equipmentId', '66a000000000000000000202', 'Equipment', 'relation', {
          relation: { targetObject: 'equipment', relationshipType: 'MANY_TO_ONE', multi: false },
        }),
        field('inspectorIds', '66a000000000000000000203', 'Inspectors', 'relation', {
          relation: { targetObject: 'team', relationshipType: 'MANY_TO_ONE', multi: true },
        }),
        field('result', '66a000000000000000000204', 'Result', 'select', { options: opts('pass', 'fail', 'needs_followup') }),
        field('notes', '66a000000000000000000205', 'Notes', 'text'),
        statusField('66a000000000000000000206', INSPECTION_STAGES),
      ],
      pipeline: {
        name: 'Inspection flow',
        fieldName: 'status',
        stages: INSPECTION_STAGES,
        transitions: { scheduled: ['in_progress'], in_progress: ['passed', 'failed'], passed: [], failed: ['scheduled'] },
      },
    },
    {
      slug: 'legacy_assets',
      nameSingular: 'Legacy asset',
      namePlural: 'Legacy assets',
      isChildObject: false,
      parentObjectSlug: null,
      enabled: false,
      displayIdPrefix: null,
      displayField: 'label',
      fields: [
        field('label', '66a000000000000000000301', 'Label', 'text', { required: true }),
        statusField('66a000000000000000000302', ASSET_STAGES),
      ],
      pipeline: { name: 'Asset state', fieldName: 'status', stages: ASSET_STAGES, transitions: { open: ['closed'], closed: [] } },
    },
  ]
}

const CLIENT_STAGE_LIST = stages(...CLIENT_STAGES.map((s): [string, boolean] => [s, s === 'Lost' || s === 'Inactive Client'])).map((s) => ({
  ...s,
  label: s.value,
}))

/** The `client` schema: custom client fields (their ids go into `properties`) and the client pipeline. */
export function clientSchema(): ObjectDef {
  return {
    slug: 'client',
    nameSingular: 'Client',
    namePlural: 'Clients',
    isChildObject: false,
    parentObjectSlug: null,
    enabled: true,
    displayIdPrefix: null,
    displayField: 'firstName',
    fields: [
      field('gateCode', '66b000000000000000000001', 'Gate code', 'text'),
      field('referralSource', '66b000000000000000000002', 'Referral source', 'select', {
        options: opts('google', 'referral', 'yard_sign', 'repeat'),
      }),
      field('preferredDays', '66b000000000000000000003', 'Preferred days', 'select', { options: opts('mon', 'tue', 'wed', 'thu', 'fri') }),
      field('accountManager', '66b000000000000000000004', 'Account manager', 'text'),
    ],
    pipeline: {
      name: 'Client pipeline',
      fieldName: 'stage',
      stages: CLIENT_STAGE_LIST,
      transitions: Object.fromEntries(
        CLIENT_STAGE_LIST.map((s) => [s.value, CLIENT_STAGE_LIST.filter((t) => t.value !== s.value).map((t) => t.value)]),
      ),
    },
  }
}
