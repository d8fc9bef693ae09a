// Realistic-looking names and places for the seeded account. Fictional; phone numbers use the
// 555-01xx range reserved for fiction.

export const FIRST_NAMES = [
  'Olivia', 'Liam', 'Emma', 'Noah', 'Ava', 'Elijah', 'Sophia', 'Mateo', 'Isabella', 'Lucas', 'Mia', 'Levi', 'Amelia', 'Ethan',
  'Harper', 'James', 'Evelyn', 'Benjamin', 'Abigail', 'Henry', 'Emily', 'Samuel', 'Ella', 'Owen', 'Grace', 'Daniel', 'Chloe',
  'Jack', 'Zoe', 'Wyatt', 'Nora', 'Leo', 'Lily', 'Julian', 'Hannah', 'Gabriel', 'Aria', 'Carlos', 'Priya', 'Wei', 'Fatima',
  'Kenji', 'Aisha', 'Diego', 'Ingrid', 'Tomás', 'Yuki', 'Omar', 'Renée', 'Siobhan',
] as const

export const LAST_NAMES = [
  'Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez', 'Hernandez', 'Lopez',
  'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin', 'Lee', 'Perez', 'Thompson', 'White',
  'Harris', 'Sanchez', 'Clark', 'Ramirez', 'Lewis', 'Robinson', 'Walker', 'Young', 'Allen', 'King', 'Wright', 'Scott', 'Nguyen',
  'Hill', 'Flores', 'Green', 'Adams', 'Nelson', 'Baker', 'Hall', "O'Brien", 'Patel', 'Kowalski', 'Schmidt', 'Okafor', 'Tanaka',
] as const

export const COMPANY_WORDS = ['Acme', 'Summit', 'Riverbend', 'Oakridge', 'Bluebonnet', 'Lone Star', 'Pecan', 'Cedar', 'Granite', 'Prairie', 'Harbor', 'Maple'] as const
export const COMPANY_KINDS = ['Properties', 'Dental', 'Holdings', 'Bakery', 'Realty', 'Apartments', 'Storage', 'Logistics', 'Cafe', 'Veterinary Clinic'] as const

export const STREETS = ['Main St', 'Oak Ave', 'Elm St', 'Cedar Ln', 'Lamar Blvd', 'Congress Ave', 'Pecan St', 'Riverside Dr', 'Burnet Rd', 'Guadalupe St', 'Mopac Expy', 'Barton Springs Rd'] as const

/** City, state, zip, latitude, longitude. */
export const CITIES: readonly (readonly [string, string, string, number, number])[] = [
  ['Austin', 'TX', '78701', 30.2672, -97.7431], ['Round Rock', 'TX', '78664', 30.5083, -97.6789], ['Cedar Park', 'TX', '78613', 30.5052, -97.8203],
  ['Georgetown', 'TX', '78626', 30.6333, -97.6779], ['Pflugerville', 'TX', '78660', 30.4394, -97.62], ['San Marcos', 'TX', '78666', 29.8833, -97.9414],
  ['Leander', 'TX', '78641', 30.5788, -97.8531], ['Kyle', 'TX', '78640', 29.9891, -97.8772],
]

export const JOB_NOTES = ['Gate code at front desk', 'Customer prefers mornings', 'Bring ladder', 'Dog on premises', 'Call on arrival', 'Replace filter', 'Annual maintenance', 'Follow-up from last visit'] as const

export const SERVICES: readonly (readonly [string, 'Service' | 'Product', number])[] = [
  ['AC tune-up', 'Service', 129], ['Furnace inspection', 'Service', 99], ['Drain cleaning', 'Service', 175], ['Water heater flush', 'Service', 149],
  ['Thermostat (smart)', 'Product', 219], ['Air filter 16x25x1', 'Product', 18.5], ['Capacitor 45/5 MFD', 'Product', 42], ['Emergency call-out', 'Service', 250],
  ['Hourly labour', 'Service', 95], ['Copper fitting kit', 'Product', 36.75], ['Duct sealing', 'Service', 480], ['Outlet replacement', 'Service', 85],
]

export const TAX_CODES: readonly (readonly [string, number])[] = [
  ['Texas state sales tax', 6.25], ['Austin city tax', 1], ['Transit authority', 1], ['Exempt', 0], ['Travis county', 0.5], ['Special district', 0.25],
]

export const ROLES = ['Technician', 'Dispatcher', 'Admin', 'Lead Technician'] as const
export const JOB_FORMS = ['HVAC checklist', 'Plumbing inspection', 'Safety walkthrough', 'Customer sign-off', 'Electrical panel audit', 'Site survey', 'Warranty claim'] as const
