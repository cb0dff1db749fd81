export {
  COMPONENT_PORTS,
  OFFCLOUD_IMAGE,
  OffcloudContainer,
  StartedOffcloudContainer,
  type Detail,
  type Endpoint,
  type OffcloudComponent,
  type OffcloudIdentity,
  type UpRecord,
} from './offcloud-container.ts';
