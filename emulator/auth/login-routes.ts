// Interactive login (spec: Authentication, "Earlier schema revision (interactive login)"): a bearer
// JWT from `/api/auth/login`, accepted on legacy routes only (a v1 route answers 401, rule 4).
// Not shown in the spec, so emulator assumptions (emulator/README.md): the login method is POST,
// signup is `POST /api/auth/signup`, a token never expires, and a signed-up user joins the one
// emulated account. The seeded login user is the account owner (`state.ownerUserId`).
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto'
import type { Doc } from '../core/collection.js'
import { badRequest, conflict, unauthorized } from '../core/http-error.js'
import { iso } from '../core/iso-time.js'
import { asObject, rejectUnknown } from '../core/validate.js'
import type { EmulatorContext } from '../context.js'
import type { RouteDef } from '../http/router.js'

/** The seeded login user: the account owner (documented in emulator/README.md, shown by /__emulator/info). */
export const SEEDED_LOGIN = { email: 'owner@northwind-field.test', password: 'emulator-owner' } as const

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
const PERMISSIONS = { clients: true, jobs: true, visits: true, invoices: true, settings: true, team: true }

interface LoginUser {
  id: string
  name: string
  email: string
  salt: Buffer
  hash: Buffer
  roleId: string
  createdAt: string
}

const hashOf = (password: string, salt: Buffer): Buffer => scryptSync(password, salt, 32, { N: 1024 })

/** Users who signed up (the seeded owner is resolved from the live account instead). */
export class LoginUsers {
  private readonly byEmail = new Map<string, LoginUser>()

  has(email: string): boolean {
    return this.byEmail.has(email.toLowerCase())
  }

  get(email: string): LoginUser | undefined {
    return this.byEmail.get(email.toLowerCase())
  }

  add(user: Omit<LoginUser, 'salt' | 'hash'>, password: string): LoginUser {
    const salt = randomBytes(16)
    const stored = { ...user, email: user.email.toLowerCase(), salt, hash: hashOf(password, salt) }
    this.byEmail.set(stored.email, stored)
    return stored
  }
}

const passwordMatches = (u: LoginUser, password: string): boolean => timingSafeEqual(u.hash, hashOf(password, u.salt))

function email(b: Doc): string {
  if (b.email === undefined || b.email === null || b.email === '') throw badRequest("'email' is required")
  if (typeof b.email !== 'string' || !EMAIL.test(b.email.trim())) throw badRequest("'email' must be a valid email address")
  return b.email.trim().toLowerCase()
}

function password(b: Doc): string {
  if (b.password === undefined || b.password === null || b.password === '') throw badRequest("'password' is required")
  if (typeof b.password !== 'string') throw badRequest("'password' must be a string")
  if (b.password.length < 6) throw badRequest("'password' must be at least 6 characters long")
  return b.password
}

/** deviceInfo: optional `{deviceId: string, deviceType: 1 iOS | 2 Android | 3 Web (default 3), deviceToken: string | null}`. */
function deviceInfo(v: unknown): Doc | undefined {
  if (v === undefined) return undefined
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw badRequest("'deviceInfo' must be an object")
  const d = v as Doc
  rejectUnknown(d, ['deviceId', 'deviceType', 'deviceToken'], 'not part of deviceInfo')
  if (d.deviceId !== undefined && typeof d.deviceId !== 'string') throw badRequest("'deviceInfo.deviceId' must be a string")
  if (d.deviceType !== undefined && (typeof d.deviceType !== 'number' || ![1, 2, 3].includes(d.deviceType))) {
    throw badRequest("'deviceInfo.deviceType' must be the integer 1 (iOS), 2 (Android) or 3 (Web)")
  }
  if (d.deviceToken !== undefined && d.deviceToken !== null && typeof d.deviceToken !== 'string')
    throw badRequest("'deviceInfo.deviceToken' must be a string or null")
  return { deviceId: d.deviceId ?? null, deviceType: d.deviceType ?? 3, deviceToken: d.deviceToken ?? null }
}

export function loginRoutes(ctx: EmulatorContext): RouteDef[] {
  /** The seeded owner as a login user, from the live account (a reset re-seeds it). */
  const owner = (): { user: Omit<LoginUser, 'salt' | 'hash'>; roleName: string } => {
    const member = ctx.state.team.get(ctx.state.ownerUserId)?.doc
    const role = (member?.role ?? {}) as Doc
    return {
      user: {
        id: ctx.state.ownerUserId,
        name: typeof member?.name === 'string' ? member.name : 'Account Owner',
        email: SEEDED_LOGIN.email,
        roleId: typeof role.id === 'string' ? role.id : ctx.state.ownerUserId,
        createdAt: String(ctx.state.company.createdAt),
      },
      roleName: typeof role.name === 'string' ? role.name : 'Admin',
    }
  }
  const loginData = (user: Omit<LoginUser, 'salt' | 'hash'>, roleName: string, isOnboarded: boolean): Doc => {
    const company = ctx.state.company
    const payments = ctx.integrations.get('payments').connected
    return {
      id: user.id,
      name: user.name,
      email: user.email,
      token: ctx.keys.mintLoginToken(user.id, user.email),
      role: { name: roleName, permissions: PERMISSIONS, id: user.roleId },
      isOnboarded,
      isTeamMember: false,
      timezone: company.timezone,
      currency: company.currency,
      currencySymbol: company.currencySymbol,
      companyInfo: company,
      integrationStatus: { payments_connect: payments, payments_enabled: payments },
    }
  }
  return [
    {
      method: 'POST',
      path: '/api/auth/login',
      family: 'open',
      handler: (req) => {
        const b = asObject(req.body)
        rejectUnknown(b, ['email', 'password', 'deviceInfo'], 'not part of the login body')
        const address = email(b)
        const secret = password(b)
        deviceInfo(b.deviceInfo)
        if (address === SEEDED_LOGIN.email && secret === SEEDED_LOGIN.password) {
          const o = owner()
          return { body: { success: true, data: loginData(o.user, o.roleName, true) } }
        }
        const u = ctx.logins.get(address)
        if (u === undefined || !passwordMatches(u, secret)) throw unauthorized('Invalid email or password')
        return { body: { success: true, data: loginData(u, 'Admin', false) } }
      },
    },
    {
      method: 'POST',
      path: '/api/auth/signup',
      family: 'open',
      handler: (req) => {
        const b = asObject(req.body)
        rejectUnknown(b, ['name', 'email', 'password'], 'not part of the signup body')
        if (typeof b.name !== 'string' || b.name.trim() === '') throw badRequest("'name' is required (a string)")
        const address = email(b)
        const secret = password(b)
        if (address === SEEDED_LOGIN.email || ctx.logins.has(address)) throw conflict(`A user with email '${address}' already exists`)
        const now = ctx.clock.now()
        const id = ctx.state.ids.make(now)
        const u = ctx.logins.add({ id, name: b.name.trim(), email: address, roleId: ctx.state.ids.make(now), createdAt: iso(now) }, secret)
        return { body: { success: true, data: { token: ctx.keys.mintLoginToken(u.id, u.email) } } }
      },
    },
  ]
}
